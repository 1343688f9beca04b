package jsonrpc

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"strings"
	"testing"

	"github.com/mcpgate/mcpgate/vocab"
)

func TestParse(t *testing.T) {
	tests := []struct {
		line   string
		kind   Kind
		method string
		id     string
		err    bool
	}{
		{`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"x"}}`, KindRequest, "tools/call", "1", false},
		{`{"jsonrpc":"2.0","id":"a-1","method":"ping"}`, KindRequest, "ping", `"a-1"`, false},
		{`{"jsonrpc":"2.0","method":"notifications/initialized"}`, KindNotification, "notifications/initialized", "", false},
		{`{"jsonrpc":"2.0","id":7,"result":{}}`, KindResponse, "", "7", false},
		{`{"jsonrpc":"2.0","id":null,"error":{"code":-32700,"message":"x"}}`, KindResponse, "", "null", false},
		{`  {"jsonrpc":"2.0","id":2,"result":{},"x-unknown":true}  `, KindResponse, "", "2", false},
		{`[{"jsonrpc":"2.0","id":1,"method":"ping"}]`, KindBatch, "", "", false},
		{`{"jsonrpc":"1.0","id":1,"method":"ping"}`, KindInvalid, "", "", true},
		{`{"jsonrpc":"2.0","id":{"a":1},"method":"ping"}`, KindInvalid, "", "", true},
		{`{"jsonrpc":"2.0","id":true,"result":{}}`, KindInvalid, "", "", true},
		{`{"jsonrpc":"2.0"}`, KindInvalid, "", "", true},
		{`{"jsonrpc":"2.0","id":1`, KindInvalid, "", "", true},
		{`[1,2`, KindInvalid, "", "", true},
		{`"just a string"`, KindInvalid, "", "", true},
	}
	for _, tc := range tests {
		t.Run(tc.line, func(t *testing.T) {
			m, err := Parse([]byte(tc.line))
			if (err != nil) != tc.err {
				t.Fatalf("err = %v, want error %v", err, tc.err)
			}
			if tc.err {
				return
			}
			if m.Kind != tc.kind || m.Method != tc.method || (tc.id != "" && m.IDKey() != tc.id) {
				t.Fatalf("got kind %d method %q id %q", m.Kind, m.Method, m.IDKey())
			}
			if string(m.Raw) != strings.TrimSpace(tc.line) {
				t.Fatalf("Raw = %q", m.Raw)
			}
		})
	}
}

func TestReaderLimitsAndFraming(t *testing.T) {
	big := strings.Repeat("x", 100)
	input := "{\"a\":1}\r\n\n   \n" + big + "\n{\"b\":2}\n{\"c\":3}"
	r := NewReader(strings.NewReader(input), 50)
	var got []string
	var tooLarge int
	for {
		line, err := r.ReadLine()
		if errors.Is(err, io.EOF) {
			break
		}
		if errors.Is(err, ErrTooLarge) {
			tooLarge++
			continue
		}
		if err != nil {
			t.Fatal(err)
		}
		got = append(got, string(line))
	}
	want := []string{`{"a":1}`, `{"b":2}`, `{"c":3}`}
	if strings.Join(got, "|") != strings.Join(want, "|") || tooLarge != 1 {
		t.Fatalf("got %q and %d oversized, want %q and 1", got, tooLarge, want)
	}
}

func TestReaderLargeMessageWithinLimit(t *testing.T) {
	// Far past bufio.Scanner's 64 KiB default (docs/decisions.md#message-size).
	msg := `{"jsonrpc":"2.0","id":1,"result":{"t":"` + strings.Repeat("a", 5<<20) + `"}}`
	r := NewReader(strings.NewReader(msg+"\n"), 0)
	line, err := r.ReadLine()
	if err != nil || len(line) != len(msg) {
		t.Fatalf("len %d err %v", len(line), err)
	}
}

func TestMarshalKeepsHTML(t *testing.T) {
	b, err := Marshal(map[string]string{"t": "<a> & b"})
	if err != nil || string(b) != `{"t":"<a> & b"}` {
		t.Fatalf("%s %v", b, err)
	}
	resp := Response(json.RawMessage(`"x"`), json.RawMessage(`{"t":"<b>"}`))
	if !bytes.Contains(resp, []byte(`"<b>"`)) || !json.Valid(resp) {
		t.Fatalf("%s", resp)
	}
}

// FuzzParse: Parse never panics, and a message it accepts is valid JSON with a kind.
func FuzzParse(f *testing.F) {
	for _, s := range []string{
		`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{}}`,
		`{"jsonrpc":"2.0","method":"x"}`, `[{}]`, `{"jsonrpc":"2.0","id":1,"result":null}`, "\xff{",
		`{"jsonrpc":"2.0","id":1,"result":{"a":"xx"},"RESULT":{"a":"y"}}`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		m, err := Parse(b)
		if m == nil {
			t.Fatal("nil message")
		}
		if !bytes.Equal(m.Raw, bytes.TrimSpace(b)) {
			t.Fatalf("Parse rewrote %q as %q", b, m.Raw)
		}
		if err == nil && m.Kind == KindInvalid {
			t.Fatal("accepted message without a kind")
		}
		if err == nil && !json.Valid(m.Raw) {
			t.Fatalf("accepted invalid JSON %q", m.Raw)
		}
	})
}

// FuzzReadEnvelope: where readEnvelope reads an envelope in place, json.Unmarshal
// accepts the bytes and reads the same envelope; where it declines, Parse's
// json.Unmarshal gives every answer.
func FuzzReadEnvelope(f *testing.F) {
	for _, s := range []string{
		`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"a":[1,"}"]}}`,
		`{"jsonrpc":"2.0","id":"x","result":{"content":[]}, "error" : null ,"x":1,"y":2}`,
		`{"jsonrpc":null,"method":null,"id":null}`, `{"jsonrpc":"2\u002e0","method":"\u00e9\ud800"}`,
		`{"JSONRPC":"2.0"}`, `{"Id":1}`, `{"\u0069d":1}`, `{"paramſ":{}}`, `{"ıd":1}`, `{"id":1,"id":2}`,
		`{"jsonrpc":2}`, `{"method":["x"]}`, "{\"method\":\"a\xffb\"}", `{}`, `null`, `{"a":1`, ``,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		got, ok := readEnvelope(b)
		if !ok {
			return
		}
		var want envelope
		if err := json.Unmarshal(b, &want); err != nil {
			t.Fatalf("read %q in place, json.Unmarshal: %v", b, err)
		}
		if got.JSONRPC != want.JSONRPC || (got.Method == nil) != (want.Method == nil) ||
			got.Method != nil && *got.Method != *want.Method ||
			!bytes.Equal(got.ID, want.ID) || (got.ID == nil) != (want.ID == nil) ||
			!bytes.Equal(got.Params, want.Params) || (got.Params == nil) != (want.Params == nil) ||
			!bytes.Equal(got.Result, want.Result) || (got.Result == nil) != (want.Result == nil) ||
			!bytes.Equal(got.Error, want.Error) || (got.Error == nil) != (want.Error == nil) {
			t.Fatalf("%q: read in place %+v, json.Unmarshal %+v", b, got, want)
		}
	})
}

// FuzzReader: framing never panics and never returns a line over the limit.
func FuzzReader(f *testing.F) {
	f.Add([]byte("a\nb\r\n\nccc"), 2)
	f.Fuzz(func(t *testing.T, b []byte, max int) {
		if max < 1 || max > 1<<16 {
			max = 16
		}
		r := NewReader(bytes.NewReader(b), max)
		for i := 0; i < len(b)+2; i++ {
			line, err := r.ReadLine()
			if err == io.EOF {
				return
			}
			if errors.Is(err, ErrTooLarge) {
				continue
			}
			if err != nil {
				t.Fatal(err)
			}
			if len(line) > max+2 {
				t.Fatalf("line of %d bytes over limit %d", len(line), max)
			}
		}
	})
}

// TestParseCopiesTheLine: a Reader reuses its buffer, so a parsed message must not
// alias it (a relayed response once came out as the next line's bytes).
func TestParseCopiesTheLine(t *testing.T) {
	r := NewReader(strings.NewReader(`{"jsonrpc":"2.0","id":1,"result":{}}`+"\n"+`{"jsonrpc":"2.0","id":2,"result":{}}`+"\n"), 0)
	line, _ := r.ReadLine()
	m, err := Parse(line)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := r.ReadLine(); err != nil {
		t.Fatal(err)
	}
	if string(m.Raw) != `{"jsonrpc":"2.0","id":1,"result":{}}` {
		t.Fatalf("Raw changed under a later read: %s", m.Raw)
	}
}

func TestIDKey(t *testing.T) {
	same := [][]string{{"1", "1.0", "1e0", " 1 "}, {`"a"`}, {"-0.5", "-5e-1"}, {"12345678901234567890", "1.234567890123456789e19", "123456789012345678900e-1"},
		{"70", "7e1", "70.0", "700e-1", "7.0E+1", "0.7e2"}, {"0", "-0", "0.0", "0e5", "0e7000000000"}, {"1e2147483648", "10e2147483647", "0.1e2147483649"},
		{`"mcpgate-1"`, `"mcpgat\u0065-1"`, `"\u006dcpgate-1"`}, {`"a\"b"`, `"a\u0022b"`}}
	for _, group := range same {
		for _, id := range group {
			if IDKey(json.RawMessage(id)) != IDKey(json.RawMessage(group[0])) {
				t.Errorf("IDKey(%s) = %q, want it equal to IDKey(%s) = %q", id, IDKey(json.RawMessage(id)), group[0], IDKey(json.RawMessage(group[0])))
			}
		}
	}
	if IDKey(json.RawMessage(`"1"`)) == IDKey(json.RawMessage(`1`)) {
		t.Error(`the string "1" must not equal the number 1`)
	}
	// Ids are keyed by exact value, not float64 rounding: a peer that decodes numbers
	// as float64 and answers 9007199254740992 does not answer 9007199254740993.
	apart := [][2]string{{"9007199254740993", "9007199254740992"}, {"12345678901234567890", "1.2345678901234567e19"},
		{"0.1", "0.10000000000000001"}, {"1", "10"}, {"-1", "1"}, {"1e400", "1e401"}}
	for _, p := range apart {
		if IDKey(json.RawMessage(p[0])) == IDKey(json.RawMessage(p[1])) {
			t.Errorf("IDKey(%s) = IDKey(%s) = %q, want them apart", p[0], p[1], IDKey(json.RawMessage(p[0])))
		}
	}
}

func TestRequestIDMustNotBeNull(t *testing.T) {
	if _, err := Parse([]byte(`{"jsonrpc":"2.0","id":null,"method":"tools/call"}`)); err == nil {
		t.Fatal("a request with a null id was accepted")
	}
}

func TestPeekID(t *testing.T) {
	deep := strings.Repeat("[", 20000) + strings.Repeat("]", 20000)
	tests := []struct {
		line, id string
		ok       bool
	}{
		{`{"jsonrpc":"2.0","id":7,"result":{}}`, "7", true},
		{`{"result":{"a":"}\"{"},"jsonrpc":"2.0","id":"x-1"}`, `"x-1"`, true},
		{`{"jsonrpc":"2.0","result":{"deep":` + deep + `},"id":3}`, "3", true},
		{`{"jsonrpc":"2.0","id":9,"result":{"cut short`, "9", true},
		{`{"jsonrpc":"2.0","result":{"cut short`, "", false},
		{`{"jsonrpc":"2.0","\u0069d":8,"result":{"cut short`, "8", true}, // the name read decoded
		{`{"jsonrpc":"2.0","i\u0064x":8,"id":4,"result":{"cut short`, "4", true},
		{`{"jsonrpc":"2.0","id":{"no":1}}`, "", false},
		{`[1,2]`, "", false},
		{`not json`, "", false},
	}
	for _, tc := range tests {
		id, ok := PeekID([]byte(tc.line))
		if ok != tc.ok || string(id) != tc.id {
			t.Errorf("PeekID(%.60s) = %s, %v; want %s, %v", tc.line, id, ok, tc.id, tc.ok)
		}
	}
}

func FuzzPeekID(f *testing.F) {
	f.Add([]byte(`{"a":[1,{"b":"\"]"}],"id":5}`))
	f.Fuzz(func(t *testing.T, b []byte) {
		id, ok := PeekID(b)
		if ok && !json.Valid(id) {
			t.Fatalf("PeekID returned invalid JSON %q", id)
		}
	})
}

// TestExactIDs: an id passes only as an integer or a string every peer reads as itself
// (docs/decisions.md#exact-ids); Parse refuses any other, in every kind of message
// that has an id, as a message with more than one reading (inexact_id).
func TestExactIDs(t *testing.T) {
	tests := []struct {
		id   string
		want bool
	}{
		{`1`, true}, {`0`, true}, {`-0`, true}, {`7e1`, true}, {`70.0`, true}, {`1E0`, true},
		{`9007199254740991`, true}, {`-9007199254740991`, true}, {`90071992547409910e-1`, true},
		{`"9007199254740993"`, true}, {`"x"`, true}, {`null`, true},
		{`9007199254740992`, false}, {`9007199254740993`, false}, {`-9007199254740993`, false},
		{`9007199254740993.0`, false}, {`1e16`, false}, {`1e400`, false}, {`12345678901234567890`, false},
		{`1.5`, false}, {`0.1`, false}, {`5e-1`, false}, {`1.0000000000000001`, false},
		// Strings: Unicode text only. Go reads "\xff" and "\ud800" as U+FFFD (the key
		// of the id "\ufffd" in flight), JSON.parse keeps a lone surrogate, and Node
		// reads "\xe2\x82" as one U+FFFD where Go reads two.
		{`"\ufffd"`, true}, {"\"\uFFFD\"", true}, {`"\ud83d\ude00"`, true}, {"\"é\"", true}, {`""`, true},
		{"\"\xff\"", false}, {"\"\xe2\x82\"", false}, {`"\ud800"`, false}, {`"\udc00"`, false},
		{`"a\ud83dz"`, false}, {`"\ude00\ud83d"`, false},
	}
	for _, tt := range tests {
		if got := ExactID(json.RawMessage(tt.id)); got != tt.want {
			t.Errorf("ExactID(%s) = %v, want %v", tt.id, got, tt.want)
		}
	}
	for _, line := range []struct {
		text string
		kind Kind
	}{
		{`{"jsonrpc":"2.0","id":9007199254740993,"method":"tools/call","params":{"name":"read_db"}}`, KindRequest},
		{`{"jsonrpc":"2.0","id":9007199254740993,"method":"roots/list"}`, KindRequest},
		{`{"jsonrpc":"2.0","id":9007199254740992,"result":{"content":[]}}`, KindResponse},
		{`{"jsonrpc":"2.0","id":1.5,"error":{"code":-1,"message":"x"}}`, KindResponse},
		{"{\"jsonrpc\":\"2.0\",\"id\":\"\xff\",\"method\":\"tools/call\",\"params\":{\"name\":\"b\"}}", KindRequest},
		{`{"jsonrpc":"2.0","id":"\ud800","result":{"content":[]}}`, KindResponse},
	} {
		m, err := Parse([]byte(line.text))
		var a *AmbiguousError
		if !errors.As(err, &a) || a.Reason != vocab.ReasonInexactID || a.Kind != line.kind || m.Kind != KindInvalid {
			t.Errorf("Parse(%s) = %v (kind %v), want an inexact_id refusal of a %v", line.text, err, m.Kind, line.kind)
			continue
		}
		if !strings.Contains(a.Refusal("ev"), "9007199254740991") {
			t.Errorf("refusal %q does not say which ids pass", a.Refusal("ev"))
		}
	}
	if _, err := Parse([]byte(`{"jsonrpc":"2.0","id":9007199254740991,"method":"ping"}`)); err != nil {
		t.Errorf("the largest exact id was refused: %v", err)
	}
}
