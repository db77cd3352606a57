package api

import (
	"encoding/json"
	"fmt"
	"strconv"

	"github.com/labstack/echo/v4"
)

// sizedJSON writes JSON answers whole, with their Content-Length, as
// upstream's server does. ReplayWeb.page needs the length of replay.json
// before it reads it ("the size of the file is not accessible"
// otherwise), and clients can tell a cut answer from a complete one.
// Bodies are read as echo reads them.
type sizedJSON struct{ echo.DefaultJSONSerializer }

// Serialize encodes i (indented when indent is set) and writes it with a
// trailing newline, as echo's own encoder does.
func (sizedJSON) Serialize(c echo.Context, i any, indent string) error {
	var body []byte
	var err error
	if indent != "" {
		body, err = json.MarshalIndent(i, "", indent)
	} else {
		body, err = json.Marshal(i)
	}
	if err != nil {
		return fmt.Errorf("encoding the answer: %w", err)
	}
	body = append(body, '\n')
	c.Response().Header().Set(echo.HeaderContentLength, strconv.Itoa(len(body)))
	_, err = c.Response().Write(body)
	return err
}
