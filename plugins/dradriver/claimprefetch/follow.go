package claimprefetch

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/tools/cache"
)

// Follow watches the pods bound to the node and reads their claims as
// they name them (PodChanged, PodGone), telling the observer of the reads
// and of the pods that end, until ctx ends. It returns once the watch and
// the reads it started have stopped.
func (c *Claims) Follow(ctx context.Context) error {
	factory := informers.NewSharedInformerFactoryWithOptions(c.client, 0, informers.WithTweakListOptions(func(options *metav1.ListOptions) {
		options.FieldSelector = fields.OneTermEqualSelector("spec.nodeName", c.node).String()
	}))
	informer := factory.Core().V1().Pods().Informer()
	_, err := informer.AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    func(obj any) { c.objectChanged(ctx, obj) },
		UpdateFunc: func(_, obj any) { c.objectChanged(ctx, obj) },
		DeleteFunc: func(obj any) {
			if gone, ok := obj.(cache.DeletedFinalStateUnknown); ok {
				obj = gone.Obj
			}
			if pod, ok := obj.(*corev1.Pod); ok {
				c.PodGone(pod.UID)
				c.podEnded(ctx, pod)
			}
		},
	})
	if err != nil {
		return fmt.Errorf("watch the pods of node %s: %w", c.node, err)
	}
	factory.Start(ctx.Done())
	<-ctx.Done()
	factory.Shutdown()
	c.reading.Wait()
	return nil
}

func (c *Claims) objectChanged(ctx context.Context, obj any) {
	if pod, ok := obj.(*corev1.Pod); ok {
		c.PodChanged(ctx, pod)
	}
}
