package k8s

import (
	"context"
	"fmt"

	schedulingv1 "k8s.io/api/scheduling/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
)

// PriorityClass returns the PriorityClass of crawler instance i. Its value
// is -i so that instance 0 of a new crawl may preempt instance 1 or higher
// of a running one: every crawl gets going before any crawl gets wider.
func PriorityClass(i int) *schedulingv1.PriorityClass {
	return &schedulingv1.PriorityClass{
		ObjectMeta:    metav1.ObjectMeta{Name: PriorityClassName(i)},
		Value:         int32(-i),
		GlobalDefault: false,
		Description:   fmt.Sprintf("Priority for crawl instance #%d", i),
	}
}

// EnsurePriorityClasses creates the PriorityClasses of instances
// 0..maxScale-1 that are missing. A class's value cannot change once
// created, so one that exists with another value is an error.
func EnsurePriorityClasses(ctx context.Context, client kubernetes.Interface, maxScale int) error {
	api := client.SchedulingV1().PriorityClasses()
	for i := range maxScale {
		want := PriorityClass(i)
		_, err := api.Create(ctx, want, metav1.CreateOptions{})
		if err == nil {
			continue
		}
		if !apierrors.IsAlreadyExists(err) {
			return fmt.Errorf("creating priority class %s: %w", want.Name, err)
		}
		got, err := api.Get(ctx, want.Name, metav1.GetOptions{})
		if err != nil {
			return fmt.Errorf("reading priority class %s: %w", want.Name, err)
		}
		if got.Value != want.Value {
			return fmt.Errorf("priority class %s has value %d, want %d", want.Name, got.Value, want.Value)
		}
	}
	return nil
}
