// Package allfields guards the copies of one record between its shapes
// (the allocation, its checkpoint form, its API form, its protobuf form):
// Fill gives every exported field of a struct a value, and Zero names the
// exported fields a conversion left unset, so that a field added to one
// shape and forgotten in a conversion fails a test.
package allfields
