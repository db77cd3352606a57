package s3

import (
	"encoding/json"
	"fmt"
	"sync"
)

// Registry holds the configured (named) storages and the buckets of orgs
// that bring their own storage. It is safe for concurrent use.
type Registry struct {
	opts Options
	// customOpts are opts with the guarded transport, for org storages.
	customOpts Options
	named      map[string]*Bucket
	mu         sync.Mutex
	custom     map[string]*Bucket // by the configuration's JSON
	maxCache   int
}

// maxCustomBuckets bounds the cache of org storages; past it the cache
// starts over (a client is cheap to rebuild).
const maxCustomBuckets = 1000

// NewRegistry builds a Bucket for each named storage. defaultName must be
// one of them; it is the storage of orgs that have none of their own.
func NewRegistry(storages []Config, defaultName string, opts Options) (*Registry, error) {
	r := &Registry{opts: opts, customOpts: opts, named: map[string]*Bucket{},
		custom: map[string]*Bucket{}, maxCache: maxCustomBuckets}
	// One transport for every org storage, so they share its connections.
	r.customOpts.Transport = opts.CustomAllowed.Transport()
	for _, cfg := range storages {
		if cfg.Name == "" {
			return nil, fmt.Errorf("storages: an entry has no name")
		}
		if _, dup := r.named[cfg.Name]; dup {
			return nil, fmt.Errorf("storages: %q is configured twice", cfg.Name)
		}
		b, err := New(cfg, opts)
		if err != nil {
			return nil, fmt.Errorf("storages: %q: %w", cfg.Name, err)
		}
		r.named[cfg.Name] = b
	}
	if _, ok := r.named[defaultName]; !ok {
		return nil, fmt.Errorf("default storage %q: %w", defaultName, ErrUnknownStorage)
	}
	return r, nil
}

// Named returns the configured storage called name.
func (r *Registry) Named(name string) (*Bucket, error) {
	b, ok := r.named[name]
	if !ok {
		return nil, fmt.Errorf("storage %q: %w", name, ErrUnknownStorage)
	}
	return b, nil
}

// Custom returns the bucket of an org's own storage, reusing the client
// while the configuration stays the same. Its requests to internal
// addresses outside Options.CustomAllowed fail.
func (r *Registry) Custom(cfg Config) (*Bucket, error) {
	id, err := json.Marshal(cfg)
	if err != nil {
		return nil, fmt.Errorf("org storage: %w", err)
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if b, ok := r.custom[string(id)]; ok {
		return b, nil
	}
	b, err := New(cfg, r.customOpts)
	if err != nil {
		return nil, err
	}
	if len(r.custom) >= r.maxCache {
		clear(r.custom)
	}
	r.custom[string(id)] = b
	return b, nil
}
