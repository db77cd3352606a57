// Package s3 is trawler's object storage layer: S3-compatible
// buckets named in the configuration (Browsertrix's `storages` list) or
// brought by an org, and what the API does with them: store, sign
// download links, open, list and delete objects, and serve those links
// on trawler's own origin (NewAccessProxy, for an access endpoint such as
// "/data/"). It also spells the crawler's STORE_* variables and the
// per-org key layout, and refuses any key that could leave its folder
// (ErrInvalidKey).
//
// An org's own bucket is a user-given address, so its requests go through
// netpolicy's connect-time guard (Options.CustomAllowed); the configured
// storages are the operator's and are not guarded.
//
// It imports only netpolicy of trawler. It uses minio-go v7: one module,
// path-style SigV4 with presigning built in, streaming multipart uploads
// of unknown length and ranged reads (ReaderAt) for reading inside WACZ
// files without downloading them.
package s3
