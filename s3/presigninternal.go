package s3

import (
	"context"
	"time"
)

// PresignGetInternal returns a link that downloads key without
// credentials until ttl has passed, for the storage's own endpoint: the
// one crawler pods store their files at, which they reach even where
// users get relative links through the access endpoint (a crawler hands
// the link to a plain HTTP client, which cannot follow a path alone).
func (b *Bucket) PresignGetInternal(ctx context.Context, key string, ttl time.Duration) (string, error) {
	obj, err := b.object(key)
	if err != nil {
		return "", err
	}
	u, err := b.client.PresignedGetObject(ctx, b.ep.bucket, obj, ttl, nil)
	if err != nil {
		return "", b.fail("signing a link to", key, err)
	}
	return u.String(), nil
}
