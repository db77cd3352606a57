package api

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/google/uuid"
	"github.com/labstack/echo/v4"

	"github.com/trawlerhq/trawler/store"
)

// maxBodyBytes bounds request bodies; workflow configs are small.
const maxBodyBytes = 4 << 20

// timeLayout is upstream's datetime format: naive UTC, second precision.
const timeLayout = "2006-01-02T15:04:05"

// fmtTime formats t for the wire.
func fmtTime(t time.Time) string { return t.UTC().Format(timeLayout) }

// fmtTimePtr formats t, or returns nil (null) when unset.
func fmtTimePtr(t *time.Time) *string {
	if t == nil || t.IsZero() {
		return nil
	}
	s := fmtTime(*t)
	return &s
}

// opt is a request field whose absence, explicit null and value differ:
// PATCH bodies write explicit nulls but leave absent fields alone.
type opt[T any] struct {
	Set   bool // the key was in the body
	Null  bool // its value was null
	Value T
}

// UnmarshalJSON is only called when the key is present.
func (o *opt[T]) UnmarshalJSON(data []byte) error {
	o.Set = true
	if bytes.Equal(bytes.TrimSpace(data), []byte("null")) {
		o.Null = true
		return nil
	}
	return json.Unmarshal(data, &o.Value)
}

// ptr returns the value as a pointer (nil when absent or null).
func (o opt[T]) ptr() *T {
	if !o.given() {
		return nil
	}
	v := o.Value
	return &v
}

// given reports a present, non-null value.
func (o opt[T]) given() bool { return o.Set && !o.Null }

// decodeJSON reads the body into dst, turning malformed JSON and type
// mismatches into 422s with the offending field's path.
func decodeJSON(c echo.Context, dst any) error {
	body, err := io.ReadAll(http.MaxBytesReader(c.Response(), c.Request().Body, maxBodyBytes))
	if err != nil {
		var tooBig *http.MaxBytesError
		if errors.As(err, &tooBig) {
			return &apiError{status: http.StatusRequestEntityTooLarge, detail: "Request Entity Too Large"}
		}
		return badRequest("invalid request body")
	}
	return unmarshalBody(body, dst)
}

// unmarshalBody is decodeJSON after the read; the fuzz targets call it.
func unmarshalBody(body []byte, dst any) error {
	if len(bytes.TrimSpace(body)) == 0 {
		return validationError{missingField("body")}
	}
	if err := checkJSONText(body); err != nil {
		return err
	}
	err := json.Unmarshal(body, dst)
	if err == nil {
		return nil
	}
	var (
		syn *json.SyntaxError
		typ *json.UnmarshalTypeError
	)
	switch {
	case errors.As(err, &syn):
		return validationError{{Loc: []any{"body", syn.Offset}, Msg: "Expecting value", Type: "value_error.jsondecode"}}
	case errors.As(err, &typ):
		loc := []any{"body"}
		if typ.Field != "" {
			for _, f := range strings.Split(typ.Field, ".") {
				loc = append(loc, f)
			}
		}
		name := jsonTypeName(typ.Type.Kind().String())
		return validationError{{Loc: loc, Msg: "value is not a valid " + name, Type: "type_error." + name}}
	default:
		// Only a bug gets here (a dst that is not a pointer, or an
		// UnmarshalJSON of ours failing with other than a type error):
		// a 500 that logs the cause instead of showing it.
		return fmt.Errorf("decoding request body: %w", err)
	}
}

// jsonTypeName names a Go kind the way pydantic names the expected type.
func jsonTypeName(kind string) string {
	switch {
	case strings.HasPrefix(kind, "int"), strings.HasPrefix(kind, "uint"):
		return "integer"
	case strings.HasPrefix(kind, "float"):
		return "float"
	case kind == "bool":
		return "bool"
	case kind == "string":
		return "str"
	case kind == "slice", kind == "array":
		return "list"
	default:
		return "dict"
	}
}

func missingField(loc ...any) fieldError {
	return fieldError{Loc: loc, Msg: "field required", Type: "value_error.missing"}
}

// validator collects field errors so a 422 lists every problem at once.
type validator struct{ errs validationError }

func (v *validator) add(msg, typ string, loc ...any) {
	v.errs = append(v.errs, fieldError{Loc: loc, Msg: msg, Type: typ})
}

func (v *validator) missing(loc ...any) { v.errs = append(v.errs, missingField(loc...)) }

// between checks lo <= n <= hi with pydantic's messages.
func (v *validator) between(n, lo, hi int64, loc ...any) {
	switch {
	case n < lo:
		v.add(fmt.Sprintf("ensure this value is greater than or equal to %d", lo), "value_error.number.not_ge", loc...)
	case n > hi:
		v.add(fmt.Sprintf("ensure this value is less than or equal to %d", hi), "value_error.number.not_le", loc...)
	}
}

// minLength checks that s has at least n characters.
func (v *validator) minLength(s string, n int, loc ...any) {
	if utf8.RuneCountInString(s) < n {
		v.add(fmt.Sprintf("ensure this value has at least %d characters", n), "value_error.any_str.min_length", loc...)
	}
}

// notNull reports an explicit null where a value is required.
func (v *validator) notNull(loc ...any) {
	v.add("none is not an allowed value", "type_error.none.not_allowed", loc...)
}

// oneOf checks that s is one of the allowed enumeration values.
func (v *validator) oneOf(s string, allowed []string, loc ...any) {
	for _, a := range allowed {
		if s == a {
			return
		}
	}
	quoted := make([]string, len(allowed))
	for i, a := range allowed {
		quoted[i] = "'" + a + "'"
	}
	v.add("value is not a valid enumeration member; permitted: "+strings.Join(quoted, ", "), "type_error.enum", loc...)
}

func (v *validator) err() error {
	if len(v.errs) == 0 {
		return nil
	}
	return v.errs
}

// page is the pagination of list routes: 1-based page, default size 1000.
type page struct {
	Page, PageSize int
}

// paging is the page in the store's terms.
func (p page) paging() store.Paging { return store.Paging{Page: p.Page, PageSize: p.PageSize} }

// pageOut is upstream's paginated response.
type pageOut[T any] struct {
	Items    []T `json:"items"`
	Total    int `json:"total"`
	Page     int `json:"page"`
	PageSize int `json:"pageSize"`
}

func newPageOut[T any](items []T, total int, p page) pageOut[T] {
	if items == nil {
		items = []T{}
	}
	return pageOut[T]{Items: items, Total: total, Page: p.Page, PageSize: p.PageSize}
}

// query reads typed query parameters, collecting 422 errors.
type query struct {
	c    echo.Context
	v    validator
	fail error // a non-422 error, reported when there is no 422
}

func newQuery(c echo.Context) *query { return &query{c: c} }

func (q *query) str(name string) string { return q.c.QueryParam(name) }

// optStr returns nil when the parameter is absent.
func (q *query) optStr(name string) *string {
	if !q.c.QueryParams().Has(name) {
		return nil
	}
	s := q.c.QueryParam(name)
	return &s
}

// uuid returns nil when the parameter is absent or empty.
func (q *query) uuid(name string) *uuid.UUID {
	raw := q.c.QueryParam(name)
	if raw == "" {
		return nil
	}
	id, err := uuid.Parse(raw)
	if err != nil {
		q.v.add("value is not a valid uuid", "type_error.uuid", "query", name)
		return nil
	}
	return &id
}

func (q *query) int(name string, def int) int {
	raw := q.c.QueryParam(name)
	if raw == "" {
		return def
	}
	n, err := strconv.Atoi(raw)
	if err != nil {
		q.v.add("value is not a valid integer", "type_error.integer", "query", name)
		return def
	}
	return n
}

// bool parses pydantic v1's boolean spellings; nil when absent.
func (q *query) bool(name string) *bool {
	raw := q.c.QueryParam(name)
	if raw == "" {
		return nil
	}
	var b bool
	switch strings.ToLower(raw) {
	case "1", "true", "yes", "on", "y", "t":
		b = true
	case "0", "false", "no", "off", "n", "f":
		b = false
	default:
		q.v.add("value could not be parsed to a boolean", "type_error.bool", "query", name)
		return nil
	}
	return &b
}

// page reads page and pageSize. The skip they make, (page-1)*pageSize,
// stays within maxSkip, so it can neither overflow nor ask the database
// to walk a billion documents.
func (q *query) page() page {
	p := page{Page: q.int("page", 1), PageSize: q.int("pageSize", 1000)}
	q.v.between(int64(p.PageSize), 1, maxPageSize, "query", "pageSize")
	q.v.between(int64(p.Page), 1, int64(maxSkip/max(p.PageSize, 1)+1), "query", "page")
	return p
}

// sortDirection is 1 or -1 (default def); anything else is upstream's 400.
func (q *query) sortDirection(def int) int {
	d := q.int("sortDirection", def)
	if d != 1 && d != -1 {
		q.fail = badRequest("invalid_sort_direction")
	}
	return d
}

func (q *query) err() error {
	if err := q.v.err(); err != nil {
		return err
	}
	return q.fail
}
