package mcpparam

import (
	"encoding/json"
	"net/http"
	"strings"
	"testing"
)

const schema = `{"type":"object","properties":{
 "region":{"type":"string","x-mcp-header":"Region"},
 "priority":{"type":"integer","x-mcp-header":"Priority"},
 "verbose":{"type":"boolean","x-mcp-header":"Verbose"},
 "score":{"type":"number","x-mcp-header":"Score"},
 "query":{"type":"string"},
 "nested":{"type":"object","properties":{"id":{"type":"string","x-mcp-header":"Nested-Id"}}}}}`

func TestCheck(t *testing.T) {
	decls := Declarations(json.RawMessage(schema))
	if len(decls) != 5 {
		t.Fatalf("declarations: %+v", decls)
	}
	many := http.Header{}
	for i := 0; i < 10000; i++ {
		many.Add("Mcp-Param-X"+strings.Repeat("y", i%50), "v")
	}
	many.Set("Mcp-Param-Region", "Hello")
	cases := []struct {
		name, args string
		h          map[string]string
		h2         http.Header
		want       string // "" accepted, else Mismatch.Reason
	}{
		{"valid base64", `{"region":"Hello"}`, map[string]string{"Mcp-Param-Region": "=?base64?SGVsbG8=?="}, nil, ""},
		{"invalid base64 padding", `{"region":"Hello"}`, map[string]string{"Mcp-Param-Region": "=?base64?SGVsbG8?="}, nil, "invalid encoding"},
		{"invalid base64 chars", `{"region":"Hello"}`, map[string]string{"Mcp-Param-Region": "=?base64?SGVs!!!bG8=?="}, nil, "invalid encoding"},
		{"literal without prefix", `{"region":"SGVsbG8="}`, map[string]string{"Mcp-Param-Region": "SGVsbG8="}, nil, ""},
		{"literal without suffix", `{"region":"=?base64?SGVsbG8="}`, map[string]string{"Mcp-Param-Region": "=?base64?SGVsbG8="}, nil, ""},
		{"missing header", `{"region":"test-value"}`, nil, nil, "missing"},
		{"mismatch", `{"region":"us"}`, map[string]string{"Mcp-Param-Region": "eu"}, nil, "mismatch"},
		{"case of the name", `{"region":"us"}`, map[string]string{"mcp-param-region": "us"}, nil, ""},
		{"value is case-sensitive", `{"region":"us"}`, map[string]string{"Mcp-Param-Region": "US"}, nil, "mismatch"},
		{"optional whitespace", `{"region":"us"}`, map[string]string{"Mcp-Param-Region": "  us\t"}, nil, ""},
		{"unicode base64", `{"region":"日本 ✓"}`, map[string]string{"Mcp-Param-Region": "=?base64?5pel5pysIOKckw==?="}, nil, ""},
		{"unicode raw", `{"region":"日本"}`, map[string]string{"Mcp-Param-Region": "日本"}, nil, ""},
		{"base64 not UTF-8", `{"region":"x"}`, map[string]string{"Mcp-Param-Region": "=?base64?/w==?="}, nil, "invalid encoding"},
		{"empty sentinel", `{"region":""}`, map[string]string{"Mcp-Param-Region": "=?base64??="}, nil, ""},
		{"integer", `{"priority":42}`, map[string]string{"Mcp-Param-Priority": "42"}, nil, ""},
		{"integer as 42.0", `{"priority":42}`, map[string]string{"Mcp-Param-Priority": "42.0"}, nil, ""},
		{"integer differs", `{"priority":42}`, map[string]string{"Mcp-Param-Priority": "43"}, nil, "mismatch"},
		{"integer not decimal", `{"priority":42}`, map[string]string{"Mcp-Param-Priority": "4.2e1"}, nil, "mismatch"},
		{"number", `{"score":0.00001}`, map[string]string{"Mcp-Param-Score": "0.00001"}, nil, ""},
		{"number exponent", `{"score":1e21}`, map[string]string{"Mcp-Param-Score": "1e+21"}, nil, ""},
		{"integer past 2^53 needs none", `{"priority":9007199254740993}`, nil, nil, ""},
		{"boolean", `{"verbose":false}`, map[string]string{"Mcp-Param-Verbose": "false"}, nil, ""},
		{"boolean capitalised", `{"verbose":true}`, map[string]string{"Mcp-Param-Verbose": "True"}, nil, "mismatch"},
		{"null needs none", `{"verbose":null}`, nil, nil, ""},
		{"null, header ignored", `{"verbose":null}`, map[string]string{"Mcp-Param-Verbose": "true"}, nil, ""},
		{"absent, header ignored", `{}`, map[string]string{"Mcp-Param-Region": "anything"}, nil, ""},
		{"object value needs none", `{"region":{"a":1}}`, nil, nil, ""},
		{"header for a non-x-mcp-header arg", `{"query":"q"}`, map[string]string{"Mcp-Param-Query": "other"}, nil, ""},
		{"nested", `{"nested":{"id":"n1"}}`, map[string]string{"Mcp-Param-Nested-Id": "n1"}, nil, ""},
		{"nested missing", `{"nested":{"id":"n1"}}`, nil, nil, "missing"},
		{"huge header", `{"region":"a"}`, map[string]string{"Mcp-Param-Region": strings.Repeat("a", 1<<20)}, nil, "mismatch"},
		{"many headers", `{"region":"Hello"}`, nil, many, ""},
		{"two values joined", `{"region":"a, b"}`, nil, http.Header{"Mcp-Param-Region": {"a", "b"}}, ""},
		{"arguments not an object", `"x"`, nil, nil, ""},
	}
	for _, c := range cases {
		h := c.h2
		if h == nil {
			h = http.Header{}
		}
		for k, v := range c.h {
			h.Set(k, v)
		}
		m := Check(decls, json.RawMessage(c.args), h)
		got := ""
		if m != nil {
			got = m.Reason
			if strings.Contains(m.Message(), "Hello") || strings.Contains(m.Message(), "test-value") {
				t.Errorf("%s: the message holds a value: %s", c.name, m.Message())
			}
		}
		if got != c.want {
			t.Errorf("%s: got %q, want %q", c.name, got, c.want)
		}
	}
}

func TestDeclarations(t *testing.T) {
	cases := []struct {
		name, schema string
		n            int
	}{
		{"none", `{"type":"object","properties":{"a":{"type":"string"}}}`, 0},
		{"under items", `{"type":"object","properties":{"a":{"type":"array","items":{"type":"string","x-mcp-header":"A"}}}}`, 0},
		{"under anyOf", `{"type":"object","anyOf":[{"properties":{"a":{"type":"string","x-mcp-header":"A"}}}],"properties":{"b":{"type":"string","x-mcp-header":"B"}}}`, 0},
		{"on the root", `{"type":"object","x-mcp-header":"Root"}`, 0},
		{"empty", `{"type":"object","properties":{"a":{"type":"string","x-mcp-header":""}}}`, 0},
		{"space", `{"type":"object","properties":{"a":{"type":"string","x-mcp-header":"My Region"}}}`, 0},
		{"non-ASCII", `{"type":"object","properties":{"a":{"type":"string","x-mcp-header":"Région"}}}`, 0},
		{"object type", `{"type":"object","properties":{"a":{"type":"object","x-mcp-header":"A"}}}`, 0},
		{"duplicate under case folding", `{"type":"object","properties":{"a":{"type":"string","x-mcp-header":"F"},"b":{"type":"string","x-mcp-header":"f"}}}`, 0},
		{"number still checked", `{"type":"object","properties":{"a":{"type":"number","x-mcp-header":"A"}}}`, 1},
		{"malformed", `{"type":`, 0},
		{"deep", `{"type":"object","properties":{"a":` + strings.Repeat(`{"properties":{"a":`, 100) + `{}` + strings.Repeat(`}}`, 100) + `}}`, 0},
	}
	for _, c := range cases {
		if got := len(Declarations(json.RawMessage(c.schema))); got != c.n {
			t.Errorf("%s: %d declarations, want %d", c.name, got, c.n)
		}
	}
}

func TestJSNumber(t *testing.T) {
	for f, want := range map[float64]string{1: "1", -1.5: "-1.5", 0.1: "0.1", 1e21: "1e+21", 1e20: "100000000000000000000",
		1e-7: "1e-7", 0.000001: "0.000001", 123.456: "123.456", 1.5e-10: "1.5e-10"} {
		if got := jsNumber(f); got != want {
			t.Errorf("jsNumber(%v) = %q, want %q", f, got, want)
		}
	}
}
