package descriptor

import (
	"github.com/gogo/protobuf/proto"
	kvs "github.com/ligato/vpp-agent/plugins/kvscheduler/api"
)

// typed is a KV descriptor whose callbacks take the model's type V and
// the metadata's type M, so that none of them casts what the KV
// scheduler hands over: descriptor wraps them into a kvs.KVDescriptor, as
// vpp-agent's generated descriptor adapters do. Nil callbacks stay nil.
type typed[V proto.Message, M any] struct {
	Name                 string
	NBKeyPrefix          string
	ValueTypeName        string
	KeySelector          func(key string) bool
	KeyLabel             func(key string) string
	WithMetadata         bool
	MetadataMapFactory   kvs.MetadataMapFactory
	RetrieveDependencies []string

	ValueComparator    func(key string, old, new V) bool
	Validate           func(key string, value V) error
	Create             func(key string, value V) (M, error)
	Delete             func(key string, value V, metadata M) error
	Update             func(key string, old, new V, metadata M) (M, error)
	UpdateWithRecreate func(key string, old, new V, metadata M) bool
	Retrieve           func(correlate []typedKV[V, M]) ([]typedKV[V, M], error)
	DerivedValues      func(key string, value V) []kvs.KeyValuePair
	Dependencies       func(key string, value V) []kvs.Dependency
}

// typedKV is a kvs.KVWithMetadata of a typed descriptor.
type typedKV[V proto.Message, M any] struct {
	Key      string
	Value    V
	Metadata M
	Origin   kvs.ValueOrigin
}

// valueOf and metadataOf are the only casts: the scheduler hands each
// descriptor the values it selected by ValueTypeName, and the metadata
// its callbacks returned (nil before there is any).
func valueOf[V proto.Message](value proto.Message) V {
	v, _ := value.(V)
	return v
}

func metadataOf[M any](metadata kvs.Metadata) M {
	m, _ := metadata.(M)
	return m
}

// descriptor is the untyped descriptor for the KV scheduler.
func (t typed[V, M]) descriptor() *kvs.KVDescriptor {
	d := &kvs.KVDescriptor{Name: t.Name, NBKeyPrefix: t.NBKeyPrefix, ValueTypeName: t.ValueTypeName,
		KeySelector: t.KeySelector, KeyLabel: t.KeyLabel, WithMetadata: t.WithMetadata,
		MetadataMapFactory: t.MetadataMapFactory, RetrieveDependencies: t.RetrieveDependencies}
	if t.ValueComparator != nil {
		d.ValueComparator = func(key string, old, new proto.Message) bool {
			return t.ValueComparator(key, valueOf[V](old), valueOf[V](new))
		}
	}
	if t.Validate != nil {
		d.Validate = func(key string, value proto.Message) error { return t.Validate(key, valueOf[V](value)) }
	}
	if t.Create != nil {
		d.Create = func(key string, value proto.Message) (kvs.Metadata, error) {
			return t.Create(key, valueOf[V](value))
		}
	}
	if t.Delete != nil {
		d.Delete = func(key string, value proto.Message, metadata kvs.Metadata) error {
			return t.Delete(key, valueOf[V](value), metadataOf[M](metadata))
		}
	}
	if t.Update != nil {
		d.Update = func(key string, old, new proto.Message, metadata kvs.Metadata) (kvs.Metadata, error) {
			return t.Update(key, valueOf[V](old), valueOf[V](new), metadataOf[M](metadata))
		}
	}
	if t.UpdateWithRecreate != nil {
		d.UpdateWithRecreate = func(key string, old, new proto.Message, metadata kvs.Metadata) bool {
			return t.UpdateWithRecreate(key, valueOf[V](old), valueOf[V](new), metadataOf[M](metadata))
		}
	}
	if t.Retrieve != nil {
		d.Retrieve = t.retrieve
	}
	if t.DerivedValues != nil {
		d.DerivedValues = func(key string, value proto.Message) []kvs.KeyValuePair {
			return t.DerivedValues(key, valueOf[V](value))
		}
	}
	if t.Dependencies != nil {
		d.Dependencies = func(key string, value proto.Message) []kvs.Dependency {
			return t.Dependencies(key, valueOf[V](value))
		}
	}
	return d
}

func (t typed[V, M]) retrieve(correlate []kvs.KVWithMetadata) ([]kvs.KVWithMetadata, error) {
	in := make([]typedKV[V, M], 0, len(correlate))
	for _, kv := range correlate {
		in = append(in, typedKV[V, M]{Key: kv.Key, Value: valueOf[V](kv.Value), Metadata: metadataOf[M](kv.Metadata), Origin: kv.Origin})
	}
	values, err := t.Retrieve(in)
	if err != nil {
		return nil, err
	}
	out := make([]kvs.KVWithMetadata, 0, len(values))
	for _, kv := range values {
		out = append(out, kvs.KVWithMetadata{Key: kv.Key, Value: kv.Value, Metadata: kv.Metadata, Origin: kv.Origin})
	}
	return out, nil
}
