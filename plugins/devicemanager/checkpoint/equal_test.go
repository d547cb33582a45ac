package checkpoint

import (
	"reflect"
	"testing"
	"time"
)

// TestEqualSeesEveryField changes each field of an allocation in turn:
// equal must tell every change, or the Writer would journal nothing for
// it and the change would be lost at the next start. A field added to
// Allocation without equal comparing it fails here.
func TestEqualSeesEveryField(t *testing.T) {
	base := sampleData().Allocations[0]
	fields := reflect.TypeOf(base)
	for i := range fields.NumField() {
		t.Run(fields.Field(i).Name, func(t *testing.T) {
			changed := base
			changed.DeviceIDs = append([]string(nil), base.DeviceIDs...)
			field := reflect.ValueOf(&changed).Elem().Field(i)
			switch value := field.Addr().Interface().(type) {
			case *string:
				*value += "-changed"
			case *[]string:
				*value = append(*value, "memif-999")
			case *time.Time:
				*value = value.Add(time.Nanosecond)
			default:
				t.Fatalf("field %s of type %s: teach this test to change it", fields.Field(i).Name, field.Type())
			}
			if equal(base, changed) {
				t.Errorf("equal does not see a change of %s", fields.Field(i).Name)
			}
			if !equal(base, base) {
				t.Errorf("equal(a, a) is false")
			}
		})
	}
}
