package api

import (
	"context"
	"net/http"
	"strings"
	"time"

	"github.com/labstack/echo/v4"

	"github.com/trawlerhq/trawler/k8s"
	"github.com/trawlerhq/trawler/s3"
	"github.com/trawlerhq/trawler/store"
)

// orgStorageIn is PATCH /orgs/{oid}/storage: a configured storage by
// name ({"type": "default", "name": ...}) or the org's own S3 bucket
// ({"type": "s3", "endpoint_url": "https://host/bucket/prefix/", ...}).
type orgStorageIn struct {
	Type                string  `json:"type"`
	Name                *string `json:"name"`
	EndpointURL         *string `json:"endpoint_url"`
	AccessKey           *string `json:"access_key"`
	SecretKey           *string `json:"secret_key"`
	AccessEndpointURL   *string `json:"access_endpoint_url"`
	Region              *string `json:"region"`
	UseAccessForPresign *bool   `json:"use_access_for_presign"`
}

// verifyObject is what checking an org's bucket writes, as upstream.
const verifyObject = ".btrix-upload-verify"

// verifyBudget is how long the test upload to an org's bucket may take,
// and how long a failed one takes to answer, whatever failed: a closed
// port, a silent one, a server refusing the keys or an address the guard
// refused. An answer as soon as the failure is known would tell an org
// owner which inside ports are open.
const verifyBudget = 10 * time.Second

// setOrgStorage switches where the org's new crawls store their files.
// An own bucket must accept a test upload with the given keys first; its
// credentials then reach crawler pods as the Secret storage-<oid>.
// Existing files stay where they are and remain readable.
func (s *Server) setOrgStorage(c echo.Context) error {
	var in orgStorageIn
	if err := decodeJSON(c, &in); err != nil {
		return err
	}
	ctx, org := c.Request().Context(), currentOrg(c)
	var st store.Storage
	switch {
	case in.Type == "s3":
		var err error
		if st, err = s.checkOwnStorage(ctx, in); err != nil {
			return err
		}
	case in.Type == "default" || (in.Type == "" && in.Name != nil):
		if in.Name == nil || s.objects == nil {
			return badRequest("Invalid default storage " + deref(in.Name))
		}
		if _, err := s.objects.Named(*in.Name); err != nil {
			return badRequest("Invalid default storage " + *in.Name)
		}
		// The org's folder, whatever the body says: files never go to
		// the bucket root or another org's folder.
		st = store.Storage{Type: "default", Name: *in.Name, Path: s3.OrgPrefix(org.ID.String())}
	default:
		return validationError{{Loc: []any{"body", "type"}, Msg: `type must be "default" or "s3"`, Type: "value_error"}}
	}
	if err := s.store.SetOrgStorage(ctx, org.ID, st); err != nil {
		return err
	}
	if s.secrets != nil {
		name := k8s.StorageSecretName(org.ID.String())
		var err error
		if st.Type == "s3" {
			err = s.secrets.ApplyStorageSecret(ctx, name, orgStorageConfig(st).CrawlerEnv())
		} else {
			err = s.secrets.DeleteStorageSecret(ctx, name)
		}
		if err != nil {
			return err
		}
	}
	return c.JSON(http.StatusOK, updatedOut{Updated: true})
}

// checkOwnStorage validates an own-bucket body and writes the verify
// object with its keys.
func (s *Server) checkOwnStorage(ctx context.Context, in orgStorageIn) (store.Storage, error) {
	var v validator
	for _, f := range []struct {
		name string
		val  *string
	}{{"endpoint_url", in.EndpointURL}, {"access_key", in.AccessKey}, {"secret_key", in.SecretKey}} {
		if f.val == nil || *f.val == "" {
			v.missing("body", f.name)
		}
	}
	// No request at all to an address that is plainly internal; a name
	// that resolves inside is refused by the bucket's guarded dialer.
	if in.EndpointURL != nil {
		v.internalHost(*in.EndpointURL, s.cfg.AllowedOutbound, "org storages", "body", "endpoint_url")
	}
	if err := v.err(); err != nil {
		return store.Storage{}, err
	}
	st := store.Storage{Type: "s3", EndpointURL: *in.EndpointURL, AccessKey: *in.AccessKey, SecretKey: *in.SecretKey,
		AccessEndpointURL: deref(in.AccessEndpointURL), Region: deref(in.Region), UseAccessForPresign: in.UseAccessForPresign}
	if !strings.HasSuffix(st.EndpointURL, "/") {
		st.EndpointURL += "/"
	}
	if s.objects == nil {
		return store.Storage{}, badRequest(detailUnverifiedStorage)
	}
	budget, cancel := context.WithTimeout(ctx, s.verifyBudget)
	defer cancel()
	b, err := s.objects.Custom(orgStorageConfig(st))
	if err == nil {
		_, err = b.Put(budget, verifyObject, strings.NewReader(""), 0, "text/plain")
	}
	if err != nil {
		s.log.Info("org storage failed verification", "endpoint", st.EndpointURL, "err", err)
		<-budget.Done() // the whole budget, or the client's end
		return store.Storage{}, badRequest(detailUnverifiedStorage)
	}
	return st, nil
}

// detailUnverifiedStorage is the one answer to every failed verification
// of an org's bucket, so it tells nothing of what stands behind the
// address.
const detailUnverifiedStorage = "Could not verify custom storage. Check credentials are valid?"

func deref(p *string) string {
	if p == nil {
		return ""
	}
	return *p
}
