package api

import (
	"regexp"
	"testing"
)

func TestUploadFilename(t *testing.T) {
	for client, want := range map[string]string{
		"test.wacz":           `^test-[a-z2-7]{8}\.wacz$`,
		"my.site.wacz":        `^my-[a-z2-7]{8}\.site\.wacz$`,
		"dir/sub/test.wacz":   `^test-[a-z2-7]{8}\.wacz$`,
		`C:\Users\me\a.wacz`:  `^a-[a-z2-7]{8}\.wacz$`,
		"we<i>rd:na*me?.wacz": `^weirdname-[a-z2-7]{8}\.wacz$`,
		"../../etc/passwd":    `^passwd-[a-z2-7]{8}$`,
		"ctl\x00\nname.wacz":  `^ctlname-[a-z2-7]{8}\.wacz$`,
		"":                    `^-[a-z2-7]{8}$`,
		"..":                  `^-[a-z2-7]{8}\.\.$`,
	} {
		got := uploadFilename(client)
		if !regexp.MustCompile(want).MatchString(got) {
			t.Errorf("%q: %q does not match %s", client, got, want)
		}
	}
	if uploadFilename("a.wacz") == uploadFilename("a.wacz") {
		t.Error("two uploads of one name got the same stored name")
	}
}
