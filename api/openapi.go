package api

import (
	"encoding/json"
	"net/http"
	"reflect"
	"regexp"
	"strconv"
	"strings"
	"sync"

	"github.com/google/uuid"
	"github.com/labstack/echo/v4"
)

// The OpenAPI 3 document is generated from the route table and the DTO
// types, so it cannot drift from what the server registers and encodes.

// openAPIDoc caches the encoded document.
type openAPIDoc struct {
	once sync.Once
	json []byte
}

func (s *Server) openAPI(c echo.Context) error {
	s.openAPIDoc.once.Do(func() {
		var err error
		if s.openAPIDoc.json, err = json.Marshal(buildOpenAPI(s.routes())); err != nil {
			panic(err) // the document is built from static types; this is a bug
		}
	})
	return c.JSONBlob(http.StatusOK, s.openAPIDoc.json)
}

var pathParam = regexp.MustCompile(`:([A-Za-z_]+)`)

// openAPIPath turns an echo path into an OpenAPI one (":oid" -> "{oid}").
func openAPIPath(p string) string { return pathParam.ReplaceAllString(p, "{$1}") }

// buildOpenAPI is the document for routes.
func buildOpenAPI(routes []route) map[string]any {
	g := &schemaGen{defs: map[string]any{}}
	paths := map[string]map[string]any{}
	for _, r := range routes {
		p := openAPIPath(r.path)
		if paths[p] == nil {
			paths[p] = map[string]any{}
		}
		paths[p][strings.ToLower(r.method)] = g.operation(r)
	}
	return map[string]any{
		"openapi": "3.0.3",
		"info":    map[string]any{"title": "trawler", "version": "1.0", "description": "Browsertrix-compatible crawl API"},
		"paths":   paths,
		"components": map[string]any{
			"schemas": g.defs,
			"securitySchemes": map[string]any{
				"bearer": map[string]any{"type": "http", "scheme": "bearer", "bearerFormat": "JWT"},
			},
		},
	}
}

func (g *schemaGen) operation(r route) map[string]any {
	op := map[string]any{"summary": r.summary, "tags": []string{r.tag},
		"operationId": strings.ToLower(r.method) + strings.NewReplacer("/", "_", ":", "", "-", "_", ".", "_").Replace(r.path)}
	var params []map[string]any
	for _, m := range pathParam.FindAllStringSubmatch(r.path, -1) {
		params = append(params, map[string]any{"name": m[1], "in": "path", "required": true, "schema": map[string]any{"type": "string"}})
	}
	for _, q := range r.query {
		params = append(params, map[string]any{"name": q, "in": "query", "schema": map[string]any{"type": "string"}})
	}
	if params != nil {
		op["parameters"] = params
	}
	switch in := r.in.(type) {
	case nil:
	case formIn:
		props := map[string]any{}
		for _, f := range in.fields {
			props[f] = map[string]any{"type": "string"}
		}
		op["requestBody"] = map[string]any{"required": true, "content": map[string]any{
			"application/x-www-form-urlencoded": map[string]any{"schema": map[string]any{
				"type": "object", "properties": props, "required": []string{"username", "password"}}}}}
	case binaryIn:
		op["requestBody"] = map[string]any{"required": true, "content": map[string]any{
			"application/octet-stream": map[string]any{"schema": map[string]any{"type": "string", "format": "binary"}}}}
	case multipartIn:
		file := map[string]any{"type": "string", "format": "binary"}
		op["requestBody"] = map[string]any{"required": true, "content": map[string]any{
			"multipart/form-data": map[string]any{"schema": map[string]any{"type": "object", "required": []string{in.part},
				"properties": map[string]any{in.part: map[string]any{"type": "array", "items": file}}}}}}
	default:
		op["requestBody"] = map[string]any{"required": true, "content": map[string]any{
			"application/json": map[string]any{"schema": g.schema(reflect.TypeOf(in))}}}
	}
	ok := map[string]any{"description": "OK"}
	switch out := r.out.(type) {
	case nil:
	case eventStream:
		ok["content"] = map[string]any{"text/event-stream": map[string]any{"schema": g.schema(reflect.TypeOf(out.data))}}
	case streamOut:
		ok["content"] = map[string]any{out.contentType: map[string]any{"schema": map[string]any{"type": "string"}}}
	default:
		ok["content"] = map[string]any{"application/json": map[string]any{"schema": g.schema(reflect.TypeOf(r.out))}}
	}
	errResp := map[string]any{"description": "Error", "content": map[string]any{"application/json": map[string]any{
		"schema": map[string]any{"type": "object", "properties": map[string]any{"detail": map[string]any{}}}}}}
	code := http.StatusOK
	if c, ok := successStatus[r.method+" "+r.path]; ok {
		code = c
	}
	responses := map[string]any{strconv.Itoa(code): ok, "default": errResp}
	if r.access != accessPublic {
		op["security"] = []map[string][]string{{"bearer": {}}}
		responses["401"] = errResp
	}
	op["responses"] = responses
	return op
}

// schemaGen builds JSON schemas from DTO types, collecting named structs
// under components/schemas.
type schemaGen struct{ defs map[string]any }

var (
	uuidType     = reflect.TypeFor[uuid.UUID]()
	patternsType = reflect.TypeFor[patternsIn]()
	sitemapType  = reflect.TypeFor[sitemapIn]()
)

func nullable(s map[string]any) map[string]any {
	out := map[string]any{"nullable": true}
	for k, v := range s {
		out[k] = v
	}
	return out
}

func (g *schemaGen) schema(t reflect.Type) map[string]any {
	switch {
	case t == uuidType:
		return map[string]any{"type": "string", "format": "uuid"}
	case t == patternsType:
		return map[string]any{"nullable": true, "oneOf": []any{
			map[string]any{"type": "string"}, map[string]any{"type": "array", "items": map[string]any{"type": "string"}}}}
	case t == sitemapType:
		return map[string]any{"oneOf": []any{map[string]any{"type": "boolean"}, map[string]any{"type": "string"}}}
	case t.Kind() == reflect.Struct && strings.HasPrefix(t.Name(), "opt["):
		f, _ := t.FieldByName("Value")
		return nullable(g.schema(f.Type))
	}
	switch t.Kind() {
	case reflect.Pointer:
		return nullable(g.schema(t.Elem()))
	case reflect.Bool:
		return map[string]any{"type": "boolean"}
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
		reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		return map[string]any{"type": "integer"}
	case reflect.Float32, reflect.Float64:
		return map[string]any{"type": "number"}
	case reflect.String:
		return map[string]any{"type": "string"}
	case reflect.Slice, reflect.Array:
		return map[string]any{"type": "array", "items": g.schema(t.Elem())}
	case reflect.Map:
		return map[string]any{"type": "object", "additionalProperties": g.schema(t.Elem())}
	case reflect.Struct:
		return g.ref(t)
	default:
		return map[string]any{}
	}
}

// ref defines a named struct once and refers to it.
func (g *schemaGen) ref(t reflect.Type) map[string]any {
	name := strings.NewReplacer("[", "_", "]", "", "github.com/trawlerhq/trawler/", "", "/", "_", ".", "_", "*", "").Replace(t.Name())
	if name == "" {
		return g.object(t)
	}
	if _, ok := g.defs[name]; !ok {
		g.defs[name] = map[string]any{} // placeholder against recursion
		g.defs[name] = g.object(t)
	}
	return map[string]any{"$ref": "#/components/schemas/" + name}
}

func (g *schemaGen) object(t reflect.Type) map[string]any {
	props := map[string]any{}
	g.addFields(t, props)
	return map[string]any{"type": "object", "properties": props}
}

// addFields adds t's JSON fields, flattening embedded structs as
// encoding/json does.
func (g *schemaGen) addFields(t reflect.Type, props map[string]any) {
	for i := range t.NumField() {
		f := t.Field(i)
		tag := f.Tag.Get("json")
		name, _, _ := strings.Cut(tag, ",")
		if f.Anonymous && name == "" && f.Type.Kind() == reflect.Struct {
			g.addFields(f.Type, props)
			continue
		}
		if !f.IsExported() || name == "-" {
			continue
		}
		if name == "" {
			name = f.Name
		}
		props[name] = g.schema(f.Type)
	}
}
