package devstack

import (
	"fmt"
	"maps"
	"os"
	"slices"

	"github.com/spf13/viper"
)

// EnvVars are what `make dev` writes to .dev/env: where the API, the
// cluster, the stores, Mailpit and the S3 server are, and the superuser's
// credentials from v.
func (s *Stack) EnvVars(v *viper.Viper) map[string]string {
	return map[string]string{
		"TRAWLER_API_URL":   s.APIURL,
		"KUBECONFIG":        s.Env.Kubeconfig(),
		"TRAWLER_MONGO_URI": s.Env.MongoURI(),
		"MONGO_URI":         s.Env.MongoURI(),
		"TRAWLER_REDIS_URL": s.Env.RedisURL(0),
		"REDIS_URL":         s.Env.RedisURL(0),
		"TRAWLER_USERNAME":  v.GetString("superuser.email"),
		"TRAWLER_PASSWORD":  v.GetString("superuser.password"),
		"MAILPIT_URL":       s.Env.MailpitURL(),
		// The S3 server as the host reaches it (the download links point
		// there too), e.g. for the aws CLI or curl --aws-sigv4.
		"S3_ENDPOINT_URL":       s.Env.S3.URL(),
		"S3_BUCKET":             Bucket,
		"AWS_ACCESS_KEY_ID":     s.Env.S3.AccessKey,
		"AWS_SECRET_ACCESS_KEY": s.Env.S3.SecretKey,
	}
}

// WriteEnv writes vars to path as a shell script of exports, sorted by
// name, for `source .dev/env`.
func WriteEnv(path string, vars map[string]string) error {
	var b []byte
	for _, k := range slices.Sorted(maps.Keys(vars)) {
		b = fmt.Appendf(b, "export %s=%q\n", k, vars[k])
	}
	if err := os.WriteFile(path, b, 0o600); err != nil {
		return fmt.Errorf("writing %s: %w", path, err)
	}
	return nil
}
