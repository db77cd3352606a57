package operator

import (
	"encoding/json"
	"testing"

	trawlerv1 "github.com/trawlerhq/trawler/k8s/apis/trawler/v1"
)

func TestStatusPatchHoldsWhatChanged(t *testing.T) {
	code := int32(0)
	old := trawlerv1.CrawlJobStatus{State: "running", Scale: 2, PagesDone: 3, PagesFound: 10,
		Pods: map[string]trawlerv1.PodStatus{"0": {Phase: "Running"}, "1": {Phase: "Running"}}}
	tests := []struct {
		name string
		cur  func(*trawlerv1.CrawlJobStatus)
		rv   string
		want string
	}{
		{"nothing", func(*trawlerv1.CrawlJobStatus) {}, "", `{}`},
		{"progress", func(s *trawlerv1.CrawlJobStatus) { s.PagesDone, s.SizeHuman = 4, "1.0 kB" }, "",
			`{"status":{"pagesDone":4,"sizeHuman":"1.0 kB"}}`},
		{"a pod exits, another goes", func(s *trawlerv1.CrawlJobStatus) {
			s.Pods = map[string]trawlerv1.PodStatus{"0": {Phase: "Succeeded", ExitCode: &code}}
		}, "", `{"status":{"pods":{"0":{"exitCode":0,"phase":"Succeeded"},"1":null}}}`},
		{"a state change is conditional", func(s *trawlerv1.CrawlJobStatus) { s.State, s.Stopping = "pending-wait", true }, "41",
			`{"metadata":{"resourceVersion":"41"},"status":{"state":"pending-wait","stopping":true}}`},
		{"a field cleared", func(s *trawlerv1.CrawlJobStatus) { s.Scale = 0 }, "", `{"status":{"scale":null}}`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cur := *old.DeepCopy()
			tt.cur(&cur)
			got, err := statusPatch(old, cur, tt.rv)
			if err != nil {
				t.Fatal(err)
			}
			if !jsonEqual(t, got, []byte(tt.want)) {
				t.Errorf("patch %s, want %s", got, tt.want)
			}
		})
	}
}

func jsonEqual(t *testing.T, a, b []byte) bool {
	t.Helper()
	var x, y any
	if err := json.Unmarshal(a, &x); err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(b, &y); err != nil {
		t.Fatal(err)
	}
	ja, _ := json.Marshal(x)
	jb, _ := json.Marshal(y)
	return string(ja) == string(jb)
}
