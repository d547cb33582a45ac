package allfields

import (
	"fmt"
	"reflect"
	"time"
)

// Fill sets every exported field of the struct ptr points to, nested
// structs included, to a value that is not its zero value and differs
// from field to field. It panics on a field type it does not know: teach
// it that type.
func Fill(ptr any) {
	n := 0
	fill(reflect.ValueOf(ptr).Elem(), &n)
}

func fill(v reflect.Value, n *int) {
	*n++
	switch {
	case v.Type() == reflect.TypeOf(time.Time{}):
		v.Set(reflect.ValueOf(time.Date(2026, 1, 2, 3, 4, 5, *n, time.UTC)))
	case v.Kind() == reflect.Struct:
		for i := range v.NumField() {
			if v.Type().Field(i).IsExported() {
				fill(v.Field(i), n)
			}
		}
	case v.Kind() == reflect.String:
		v.SetString(fmt.Sprintf("value-%d", *n))
	case v.Kind() == reflect.Slice && v.Type().Elem().Kind() == reflect.String:
		v.Set(reflect.ValueOf([]string{fmt.Sprintf("value-%d-a", *n), fmt.Sprintf("value-%d-b", *n)}).Convert(v.Type()))
	case v.Kind() == reflect.Slice && v.Type().Elem().Kind() == reflect.Struct:
		v.Set(reflect.MakeSlice(v.Type(), 1, 1))
		fill(v.Index(0), n)
	case v.CanInt():
		v.SetInt(int64(*n))
	case v.CanUint():
		v.SetUint(uint64(*n))
	case v.Kind() == reflect.Bool:
		v.SetBool(true)
	default:
		panic(fmt.Sprintf("allfields: cannot fill a field of type %s", v.Type()))
	}
}

// Zero returns the names of the exported fields of the struct v (or the
// struct a pointer v points to) that hold their zero value.
func Zero(v any) []string {
	value := reflect.Indirect(reflect.ValueOf(v))
	var zero []string
	for i := range value.NumField() {
		if value.Type().Field(i).IsExported() && value.Field(i).IsZero() {
			zero = append(zero, value.Type().Field(i).Name)
		}
	}
	return zero
}
