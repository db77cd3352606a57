package crawlersim

import (
	"io"
	"sync"
	"time"
)

// Log levels, as the crawler names them.
const (
	levelDebug = "debug"
	levelInfo  = "info"
	levelWarn  = "warn"
	levelError = "error"
	levelFatal = "fatal"
)

// logger writes the crawler's JSON log lines to stdout and, once the
// collection exists, to the session's log file (which the WACZ carries);
// once the crawl state exists and --logErrorsToRedis is set, it also
// pushes error and fatal lines to <id>:e.
type logger struct {
	mu      sync.Mutex
	out     io.Writer
	file    io.Writer
	now     func() time.Time
	debug   bool
	toRedis func(line string)
}

// setFile adds the session's log file as a second output.
func (l *logger) setFile(f io.Writer) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.file = f
}

// setDebug turns debug lines on or off (--logging ...,debug).
func (l *logger) setDebug(on bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.debug = on
}

func (l *logger) setRedisSink(sink func(line string)) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.toRedis = sink
}

func (l *logger) log(level, context, message string, details map[string]any) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if line, ok := l.writeLocked(level, context, message, details); ok {
		l.toRedis(line)
	}
}

// pageLine writes a line about a page at once, but returns a line that
// belongs in <id>:e (ok) instead of pushing it: the page's mark as
// finished or failed pushes it in the same step, so a crawler that dies
// half-way through a page, and crawls it again after its restart, leaves
// the page's lines in <id>:e once.
func (l *logger) pageLine(level, context, message string, details map[string]any) (line string, ok bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.writeLocked(level, context, message, details)
}

// writeLocked writes one line to stdout and the log file, and returns it
// when it is also for <id>:e.
func (l *logger) writeLocked(level, context, message string, details map[string]any) (string, bool) {
	if level == levelDebug && !l.debug {
		return "", false
	}
	if details == nil {
		details = map[string]any{}
	}
	data, err := marshalJSON(logLine{Timestamp: isoTime(l.now()), LogLevel: level, Context: context, Message: message, Details: details})
	if err != nil {
		data, _ = marshalJSON(logLine{Timestamp: isoTime(l.now()), LogLevel: levelError, Context: "general",
			Message: "unloggable details", Details: map[string]any{"message": message}})
	}
	_, _ = l.out.Write(append(data, '\n'))
	if l.file != nil {
		_, _ = l.file.Write(append(data, '\n'))
	}
	return string(data), l.toRedis != nil && (level == levelError || level == levelFatal)
}

func (l *logger) debugf(context, message string, details map[string]any) {
	l.log(levelDebug, context, message, details)
}

func (l *logger) info(context, message string, details map[string]any) {
	l.log(levelInfo, context, message, details)
}

func (l *logger) warn(context, message string, details map[string]any) {
	l.log(levelWarn, context, message, details)
}

func (l *logger) error(context, message string, details map[string]any) {
	l.log(levelError, context, message, details)
}

// exception renders an error the way the crawler renders a thrown
// exception in log details.
func exception(err error) map[string]any {
	return map[string]any{"type": "exception", "message": err.Error(), "stack": "Error: " + err.Error()}
}
