package jsonrpc

import (
	"bytes"
	"encoding/json"
	"reflect"
	"strings"
	"testing"
	"unicode"

	"github.com/mark3labs/mcp-go/mcp"
)

// FuzzOneReading reads the same bytes three ways: as the gateway does (Parse, then
// params and result members by exact name, as the pipeline and the multiplexer read
// them), as encoding/json does into MCP's structs (mcp-go's CallToolParams, and a
// struct field per member name, which is how a Go server binds arguments), and as an
// exact-name JSON reader (JSON.parse, Python: members in order, the last of equal
// names). It fails on any message Parse accepts that two of them read differently
// (docs/decisions.md#one-reading).
func FuzzOneReading(f *testing.F) {
	for _, s := range []string{
		`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"x","arguments":{"force":true,"opts":{"a":[1,{"b":2}]}},"_meta":{"progressToken":1}}}`,
		`{"jsonrpc":"2.0","id":"a","result":{"content":[{"type":"text","text":"hi"}],"structuredContent":{"Name":"v"},"isError":false}}`,
		`{"jsonrpc":"2.0","id":2,"error":{"code":-32000,"message":"m","data":{"k":1}}}`,
		`{"jsonrpc":"2.0","method":"notifications/message","params":{"level":"info","data":{"x":"y"}}}`,
		`{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"safe","NAME":"wipe"}}`,
		`{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"safe","Arguments":{"force":true}}}`,
		`{"jsonrpc":"2.0","id":4,"method":"tools/call","paramſ":{"name":"w"},"params":{"name":"s"}}`,
		`{"jsonrpc":"2.0","id":5,"method":"x","params":{"a\u017f":1,"as":2,"\u212a":3,"k":4}}`,
		`{"jsonrpc":"2.0","id":6,"method":"x","params":{"\ud800":1,"\ufffd":2}}`,
		"{\"jsonrpc\":\"2.0\",\"id\":7,\"method\":\"x\",\"params\":{\"a\xff\":1,\"a\\ufffd\":2}}",
		`{"jsonrpc":"2.0","id":8,"method":"x","params":{"\u0130":1,"i":2,"I":3}}`,
		`{"jsonrpc":"2.0","id":9,"method":"ping","Method":"tools/call"}`,
		`{"jsonrpc":"2.0","id":10,"method":"sampling/createMessage","params":{"messages":[{"role":"user","content":{"type":"text","Text":"x"}}],"maxTokens":9}}`,
		`{"jsonrpc":"2.0","id":11,"result":{"messages":[{"role":"user","content":[{"type":"text","text":"a"}]}]}}`,
		`{"jsonrpc":"2.0","id":12,"result":{"role":"assistant","content":{"type":"text","text":"a"},"model":"m"}}`,
		`{"jsonrpc":"2.0","id":13,"result":{"action":"accept","content":{"Name":"x","name2":"y"}}}`,
		`{"jsonrpc":"2.0","id":14,"result":{"content":{"Type":"text"},"\u0061ction":"accept"}}`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		m, err := Parse(b)
		if err != nil || m.Kind == KindBatch {
			return
		}
		line := m.Raw
		env := exactMembers(t, line)
		// The gateway's envelope against the exact reading.
		for _, c := range []struct {
			name string
			got  json.RawMessage
		}{{"id", m.ID}, {"params", m.Params}, {"result", m.Result}, {"error", m.Error}} {
			if want := env.last(c.name); !bytes.Equal(bytes.TrimSpace(c.got), bytes.TrimSpace(want)) {
				t.Fatalf("%s: the gateway read %q, an exact reader %q in %q", c.name, c.got, want, line)
			}
		}
		if want := env.last("method"); want != nil {
			var s string
			if json.Unmarshal(want, &s) != nil || s != m.Method {
				t.Fatalf("method: the gateway read %q, an exact reader %s in %q", m.Method, want, line)
			}
		}
		// Members (the relay's reading of tools/call params) against the exact reading.
		if len(m.Params) > 0 && m.Params[0] == '{' {
			got, want := Members(m.Params), exactMembers(t, m.Params)
			if len(got) != len(want) {
				t.Fatalf("Members read %d members, an exact reader %d in %q", len(got), len(want), line)
			}
			for i := range got {
				if got[i].Name != want[i].name || !bytes.Equal(got[i].Value, bytes.TrimSpace(want[i].value)) {
					t.Fatalf("Members read %q=%q, an exact reader %q=%q in %q", got[i].Name, got[i].Value, want[i].name, want[i].value, line)
				}
			}
		}
		// encoding/json's struct reading of every object against the exact reading.
		checkStructReading(t, line, line, true)
		// mcp-go's structs for a tools/call.
		if m.Kind == KindRequest && m.Method == "tools/call" && len(m.Params) > 0 && m.Params[0] == '{' {
			var p mcp.CallToolParams
			if json.Unmarshal(m.Params, &p) == nil {
				params := exactMembers(t, m.Params)
				var name string
				_ = json.Unmarshal(params.last("name"), &name)
				if p.Name != name {
					t.Fatalf("tools/call name: mcp-go read %q, the gateway %q in %q", p.Name, name, line)
				}
				var args any
				_ = json.Unmarshal(params.last("arguments"), &args)
				if !reflect.DeepEqual(p.Arguments, args) {
					t.Fatalf("tools/call arguments: mcp-go read %v, the gateway %v in %q", p.Arguments, args, line)
				}
			}
		}
	})
}

// members is an object's members in order, names decoded.
type members []struct {
	name  string
	value json.RawMessage
}

// last returns the value of the last member with this exact name (nil when none).
func (ms members) last(name string) json.RawMessage {
	var v json.RawMessage
	for _, m := range ms {
		if m.name == name {
			v = m.value
		}
	}
	return v
}

// exactMembers reads an object's members as an exact-name reader does.
func exactMembers(t *testing.T, raw []byte) members {
	t.Helper()
	dec := json.NewDecoder(bytes.NewReader(raw))
	if tok, err := dec.Token(); err != nil || tok != json.Delim('{') {
		return nil
	}
	var ms members
	for dec.More() {
		tok, err := dec.Token()
		if err != nil {
			t.Fatalf("token: %v in %q", err, raw)
		}
		var v json.RawMessage
		if err := dec.Decode(&v); err != nil {
			t.Fatalf("value: %v in %q", err, raw)
		}
		ms = append(ms, struct {
			name  string
			value json.RawMessage
		}{tok.(string), v})
	}
	return ms
}

// checkStructReading decodes every object of v into a struct with one field per
// member name (and, on protocol levels, per MCP member name) the way a Go server or
// client binds it, and compares what each field reads with the exact reading.
func checkStructReading(t *testing.T, line, v []byte, protocol bool) {
	t.Helper()
	v = bytes.TrimSpace(v)
	if len(v) == 0 {
		return
	}
	switch v[0] {
	case '[':
		var items []json.RawMessage
		if json.Unmarshal(v, &items) != nil {
			t.Fatalf("array does not decode in %q", line)
		}
		for _, it := range items {
			checkStructReading(t, line, it, protocol)
		}
		return
	case '{':
	default:
		return
	}
	ms := exactMembers(t, v)
	names := map[string]bool{}
	for _, m := range ms {
		names[m.name] = true
	}
	if protocol {
		for n := range protocolNames {
			names[n] = true
		}
	}
	for n := range names {
		if !validTagName(n) {
			continue
		}
		typ := reflect.StructOf([]reflect.StructField{{Name: "F", Type: reflect.TypeFor[json.RawMessage](), Tag: reflect.StructTag(`json:"` + n + `"`)}})
		ptr := reflect.New(typ)
		if err := json.Unmarshal(v, ptr.Interface()); err != nil {
			t.Fatalf("struct decode: %v in %q", err, line)
		}
		got := ptr.Elem().Field(0).Interface().(json.RawMessage)
		if want := ms.last(n); !bytes.Equal(got, want) {
			t.Fatalf("member %q: encoding/json read %q, an exact reader %q in %q", n, got, want, line)
		}
	}
	for _, m := range ms {
		child := protocol && childLevel(m.name) == levelProtocol && !(m.name == "content" && bytes.HasPrefix(bytes.TrimSpace(m.value), []byte("{")))
		if protocol && m.name == "_meta" {
			checkMeta(t, line, m.value)
			continue
		}
		checkStructReading(t, line, m.value, child)
	}
}

// checkMeta checks _meta: its own names as protocol names, its values as data.
func checkMeta(t *testing.T, line, v []byte) {
	t.Helper()
	if bytes.HasPrefix(bytes.TrimSpace(v), []byte("{")) {
		ms := exactMembers(t, v)
		for n := range protocolNames {
			typ := reflect.StructOf([]reflect.StructField{{Name: "F", Type: reflect.TypeFor[json.RawMessage](), Tag: reflect.StructTag(`json:"` + n + `"`)}})
			ptr := reflect.New(typ)
			_ = json.Unmarshal(v, ptr.Interface())
			if got, want := ptr.Elem().Field(0).Interface().(json.RawMessage), ms.last(n); !bytes.Equal(got, want) {
				t.Fatalf("_meta member %q: encoding/json read %q, an exact reader %q in %q", n, got, want, line)
			}
		}
		for _, m := range ms {
			checkStructReading(t, line, m.value, false)
		}
		return
	}
	checkStructReading(t, line, v, false)
}

// validTagName mirrors encoding/json's isValidTag: names it would ignore as a tag
// cannot name a struct field, so no Go peer binds them by that name.
func validTagName(s string) bool {
	if s == "" || s == "-" {
		return false
	}
	for _, c := range s {
		switch {
		case strings.ContainsRune("!#$%&()*+-./:;<=>?@[]^_{|}~ ", c):
		case !unicode.IsLetter(c) && !unicode.IsDigit(c):
			return false
		}
	}
	return true
}
