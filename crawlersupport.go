package main

import (
	"context"
	"fmt"
	"strconv"
	"strings"

	"github.com/spf13/viper"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
)

// installCrawlerSupport creates, in the crawler namespace, what the Helm
// chart provides in a real cluster: the shared-crawler-config ConfigMap
// (CRAWL_ARGS), the Redis configuration and the default storage secret.
// Existing objects are left alone.
func installCrawlerSupport(ctx context.Context, kube kubernetes.Interface, v *viper.Viper) error {
	ns := v.GetString("crawler_namespace")
	objects := []struct {
		create func() error
		name   string
	}{
		{name: "configmap shared-crawler-config", create: func() error {
			_, err := kube.CoreV1().ConfigMaps(ns).Create(ctx, &corev1.ConfigMap{
				ObjectMeta: metav1.ObjectMeta{Name: "shared-crawler-config"},
				Data:       map[string]string{"CRAWL_ARGS": crawlArgs(v)},
			}, metav1.CreateOptions{})
			return err
		}},
		{name: "configmap shared-redis-conf", create: func() error {
			_, err := kube.CoreV1().ConfigMaps(ns).Create(ctx, &corev1.ConfigMap{
				ObjectMeta: metav1.ObjectMeta{Name: "shared-redis-conf"},
				Data:       map[string]string{"redis.conf": "appendonly yes\ndir /data\n"},
			}, metav1.CreateOptions{})
			return err
		}},
		{name: "secret storage-default", create: func() error {
			// The simulator only notifies uploads (sim.upload=webhook), so the
			// endpoint need not exist; crawls-done filenames still carry it.
			_, err := kube.CoreV1().Secrets(ns).Create(ctx, &corev1.Secret{
				ObjectMeta: metav1.ObjectMeta{Name: "storage-default"},
				StringData: map[string]string{
					"STORE_ENDPOINT_URL":        "http://local-storage.invalid/trawler-data/",
					"STORE_ACCESS_ENDPOINT_URL": "/data/",
					"STORE_ACCESS_KEY":          "dev",
					"STORE_SECRET_KEY":          "dev",
				},
			}, metav1.CreateOptions{})
			return err
		}},
	}
	for _, o := range objects {
		if err := o.create(); err != nil && !apierrors.IsAlreadyExists(err) {
			return fmt.Errorf("creating %s: %w", o.name, err)
		}
	}
	return nil
}

// crawlArgs is CRAWL_ARGS as the upstream chart renders it (without the
// empty user-agent flags, which the crawler would take literally).
func crawlArgs(v *viper.Viper) string {
	args := []string{
		"--workers", strconv.Itoa(v.GetInt("crawler.browser_instances")),
		"--sizeLimit", "10000000000", "--timeLimit", "18000",
		"--maxPageLimit", strconv.Itoa(v.GetInt("max_pages_per_crawl")),
		"--healthCheckPort", strconv.Itoa(v.GetInt("crawler.liveness_port")),
		"--diskUtilization", "90", "--logging", "stats,behaviors,debug", "--text", "false",
		"--generateWACZ", "--collection", "thecrawl", "--screencastPort", "9037",
		"--logErrorsToRedis", "--restartsOnError",
	}
	return strings.Join(args, " ")
}
