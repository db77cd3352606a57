package operator

import (
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	trawlerv1 "github.com/trawlerhq/trawler/k8s/apis/trawler/v1"
)

// Condition types the operator maintains on a CrawlJob.
const (
	// CondSpecValid is False while the spec has a problem the user must fix.
	CondSpecValid = "SpecValid"
	// CondCrawlerActive tracks whether a crawler pod runs; its transition
	// time starts the Redis idle timer.
	CondCrawlerActive = "CrawlerActive"
	// CondFinishTasks is True once the post-crawl tasks are done, so a
	// restarted operator does not redo them.
	CondFinishTasks = "FinishTasksDone"
	// CondStartedNotified is True once the crawlStarted notification is
	// stored, so a restarted operator stores it if a crash came between.
	CondStartedNotified = "StartedNotified"
	// CondFailureReported is True once the reason the operator failed a
	// crawl (status.failReason) and its crawler pods' last log lines are
	// in the crawl's errors; the crawler pods stay until then.
	CondFailureReported = "FailureReported"
)

// setSpecCondition reports spec problems in the SpecValid condition.
func setSpecCondition(st *trawlerv1.CrawlJobStatus, problems []string, now time.Time) {
	if len(problems) == 0 {
		setCondition(st, CondSpecValid, metav1.ConditionTrue, "Valid", "the spec is valid", now)
		return
	}
	setCondition(st, CondSpecValid, metav1.ConditionFalse, "InvalidSpec", joinProblems(problems), now)
}

// setCrawlerActiveCondition records whether a crawler pod runs.
func setCrawlerActiveCondition(st *trawlerv1.CrawlJobStatus, active bool, now time.Time) {
	if active {
		setCondition(st, CondCrawlerActive, metav1.ConditionTrue, "CrawlerRunning", "a crawler pod is running", now)
		return
	}
	setCondition(st, CondCrawlerActive, metav1.ConditionFalse, "NoCrawlerRunning", "no crawler pod is running", now)
}

// setCondition sets a condition, moving its transition time only when its
// status changes, so a steady crawl rewrites nothing.
func setCondition(st *trawlerv1.CrawlJobStatus, typ string, status metav1.ConditionStatus, reason, msg string, now time.Time) {
	for i := range st.Conditions {
		c := &st.Conditions[i]
		if c.Type != typ {
			continue
		}
		if c.Status != status {
			c.Status = status
			c.LastTransitionTime = metav1.NewTime(now.Truncate(time.Second))
		}
		c.Reason, c.Message = reason, msg
		return
	}
	st.Conditions = append(st.Conditions, metav1.Condition{
		Type: typ, Status: status, Reason: reason, Message: msg,
		LastTransitionTime: metav1.NewTime(now.Truncate(time.Second)),
	})
}
