package s3

import "testing"

func TestStoredEncodingDropsUploadFraming(t *testing.T) {
	for _, tc := range []struct {
		in   []string
		want string
	}{
		{nil, ""},
		{[]string{"aws-chunked"}, ""},
		{[]string{"gzip"}, "gzip"},
		{[]string{"aws-chunked,gzip"}, "gzip"},
		{[]string{"AWS-Chunked", "br"}, "br"},
	} {
		if got := storedEncoding(tc.in); got != tc.want {
			t.Errorf("storedEncoding(%q) = %q, want %q", tc.in, got, tc.want)
		}
	}
}
