package sandbox

import (
	"fmt"
	"os"

	"github.com/trawlerhq/trawler/k8s"
)

// CrawlerProtocolEnv names the environment variable that chooses the
// crawler protocol of the test sandboxes' default channel: "1.x" (the
// default, as in `trawler dev`, compose and the chart) or "0.11", so the
// whole suite can run on either.
const CrawlerProtocolEnv = "TRAWLER_TEST_CRAWLER_PROTOCOL"

// TestCrawlerProtocol is the protocol CrawlerProtocolEnv chooses; it
// panics on a value that is no protocol, so a typo cannot pass for a run
// on the other one.
func TestCrawlerProtocol() string {
	switch v := os.Getenv(CrawlerProtocolEnv); v {
	case "":
		return k8s.ProtocolV1
	case k8s.ProtocolV1, k8s.ProtocolV011:
		return v
	default:
		panic(fmt.Sprintf("%s=%q: want %q or %q", CrawlerProtocolEnv, v, k8s.ProtocolV1, k8s.ProtocolV011))
	}
}
