// Package claimprefetch reads the ResourceClaims of the pods bound to the
// node before kubelet asks the DRA driver to prepare them, so that the
// read kubelet's DRA plugin library (kubeletplugin) makes at the start of
// each NodePrepareResources call is answered without a round trip to the
// API server.
//
// Claims follows the pods of its node (a watch with the field selector
// spec.nodeName=<node>, as kubelet's own), and reads by name, once, the
// claims of each pending pod as soon as the pod names them: a claim named
// in the pod's spec, or the one the resourceclaim controller made from a
// template (the pod's status.resourceClaimStatuses). It never lists or
// watches claims: it needs get on resourceclaims and list and watch on
// pods.
//
// An Observer (the driver) is told of each claim read that can be
// current, to prepare it ahead of kubelet, and of each pod of the node
// that ended (deleted, Succeeded or Failed), to release what it prepared
// for a pod kubelet never started.
//
// Client wraps the driver's API server client: its ResourceClaims(ns).Get
// hands out a read copy once (the first Get of that name takes it; a Get
// while the read is under way waits for it). It hands a copy out only
// while it can be current: read no longer ago than the time to live,
// allocated and reserved for the pod that was bound, that pod still
// pending on the node. Anything else, and any Get with options, goes to
// the API server. A claim deleted and made again under the same name
// (another UID) can be handed out once: kubeletplugin then fails the call
// ("got replaced"), and kubelet's retry reads the API server.
package claimprefetch
