package mongotest

import (
	"context"
	"sync"

	"go.mongodb.org/mongo-driver/v2/event"

	"github.com/trawlerhq/trawler/store"
)

// Commands counts the commands a store sends, by command name and the
// collection it names, so that a test can show how many round trips an
// operation costs: open the store with Open(t, cmds.Option()).
type Commands struct {
	mu sync.Mutex
	n  map[[2]string]int
}

// Option is the store option that makes the store report to c.
func (c *Commands) Option() store.Option {
	return store.WithCommandMonitor(&event.CommandMonitor{Started: c.started})
}

func (c *Commands) started(_ context.Context, e *event.CommandStartedEvent) {
	coll, _ := e.Command.Lookup(e.CommandName).StringValueOK()
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.n == nil {
		c.n = map[[2]string]int{}
	}
	c.n[[2]string{e.CommandName, coll}]++
}

// Reset forgets what was counted so far.
func (c *Commands) Reset() {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.n = nil
}

// Count is how many commands named command (find, update, findAndModify,
// ...) on collection were sent since the last Reset.
func (c *Commands) Count(command, collection string) int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.n[[2]string{command, collection}]
}
