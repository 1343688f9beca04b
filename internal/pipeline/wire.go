package pipeline

import (
	"encoding/json"
	"errors"
	"fmt"

	"github.com/google/uuid"

	"github.com/mcpgate/mcpgate/engine"
	"github.com/mcpgate/mcpgate/internal/bound"
	"github.com/mcpgate/mcpgate/internal/jsonrpc"
	"github.com/mcpgate/mcpgate/internal/jsonscan"
)

// This file holds the wire shapes: decoding a tools/call's params and building the
// results the pipeline decides on. Nothing here decides anything.

// decodeParams splits tools/call params into its keys, the tool name and the
// arguments object ({} when absent or null).
func decodeParams(raw json.RawMessage) (map[string]json.RawMessage, string, json.RawMessage, error) {
	var params map[string]json.RawMessage
	if err := json.Unmarshal(raw, &params); err != nil || params == nil {
		return nil, "", nil, errors.New("tools/call params must be an object")
	}
	var name string
	if err := json.Unmarshal(params["name"], &name); err != nil || name == "" {
		return nil, "", nil, errors.New(`tools/call params need a string "name"`)
	}
	if !bound.ToolNameOK(name) {
		return nil, name, nil, fmt.Errorf("tool name is %d bytes long; MCP tool names have 1 to %d characters", len(name), bound.ToolName)
	}
	args := params["arguments"]
	if len(args) == 0 || string(args) == "null" {
		args = json.RawMessage("{}")
	} else if args[0] != '{' {
		return nil, "", nil, errors.New(`tools/call "arguments" must be an object`)
	}
	return params, name, args, nil
}

// splitResult returns the result's content array ([] when absent) and its
// structuredContent (nil when absent); ok is false for a result that is not an object.
// It reads the two members of the result, which jsonrpc.Parse validated, without
// decoding it (docs/decisions.md#read-members); the last of a repeated name counts,
// as a decoder reads it.
func splitResult(result json.RawMessage) (content, structured json.RawMessage, ok bool) {
	ok = jsonscan.Members(result, func(name, v []byte) {
		switch {
		case jsonscan.StringIs(name, "content"):
			content = v
		case jsonscan.StringIs(name, "structuredContent"):
			structured = v
		}
	})
	if !ok {
		return nil, nil, false
	}
	if len(content) == 0 || string(content) == "null" {
		content = json.RawMessage("[]")
	}
	return content, structured, true
}

// replaceContent writes the policies' content and structuredContent into result,
// keeping every other field.
func replaceContent(result, content, structured json.RawMessage) (json.RawMessage, error) {
	var m map[string]json.RawMessage
	if err := json.Unmarshal(result, &m); err != nil {
		return nil, fmt.Errorf("result is not an object: %w", err)
	}
	if content != nil {
		m["content"] = content
	}
	if structured == nil || string(structured) == "null" {
		delete(m, "structuredContent")
	} else {
		m["structuredContent"] = structured
	}
	return jsonrpc.Marshal(m)
}

// Wire texts (docs/decisions.md#block-shape, #warn-shape, #rejection-shape; the dash is U+2014).
func blockText(eventID string) string {
	return "[mcpgate: tool output blocked — see audit log entry " + eventID + " for details]"
}

func warnText(eventID string, n int) string {
	return fmt.Sprintf("[mcpgate: WARNING — %d findings; see audit log entry %s]", n, eventID)
}

func rejectText(policy, message, eventID string) string {
	return "[mcpgate: call rejected by policy " + policy + ": " + message + " — see audit log entry " + eventID + "]"
}

// withheldText answers a post-phase throw: the server ran the call, so it was not
// rejected; its result is withheld (docs/policies.md#pre-or-post).
func withheldText(policy, message, eventID string) string {
	return "[mcpgate: result withheld by policy " + policy + ": " + message + " — see audit log entry " + eventID + "]"
}

type textItem struct {
	Type string `json:"type"`
	Text string `json:"text"`
}

// errorResult is the block shape (docs/decisions.md#block-shape): one text item and isError, nothing else.
func errorResult(text string) json.RawMessage {
	b, _ := jsonrpc.Marshal(struct {
		Content []textItem `json:"content"`
		IsError bool       `json:"isError"`
	}{[]textItem{{"text", text}}, true})
	return b
}

// noticedErrorResult is errorResult with the Warn notice first as its own item, or
// errorResult itself when notice is "" (docs/decisions.md#rejection-shape).
func noticedErrorResult(notice, text string) json.RawMessage {
	if notice == "" {
		return errorResult(text)
	}
	b, _ := jsonrpc.Marshal(struct {
		Content []textItem `json:"content"`
		IsError bool       `json:"isError"`
	}{[]textItem{{"text", notice}, {"text", text}}, true})
	return b
}

// warnResult sanitizes every text-bearing string of result and prepends the notice.
func warnResult(result json.RawMessage, eventID string, n int) (json.RawMessage, error) {
	clean, err := engine.SanitizeResult(result)
	if err != nil {
		return nil, err
	}
	var m map[string]json.RawMessage
	if err := json.Unmarshal(clean, &m); err != nil {
		return nil, err
	}
	var items []json.RawMessage
	if c := m["content"]; len(c) > 0 && string(c) != "null" {
		if err := json.Unmarshal(c, &items); err != nil {
			return nil, fmt.Errorf("content is not an array: %w", err)
		}
	}
	notice, _ := jsonrpc.Marshal(textItem{"text", warnText(eventID, n)})
	m["content"], _ = jsonrpc.Marshal(append([]json.RawMessage{notice}, items...))
	return jsonrpc.Marshal(m)
}

// newEventID returns a UUIDv4 (docs/decisions.md#block-shape).
func newEventID() string { return uuid.NewString() }

// maxRejectionText bounds the policy message an agent sees, in bytes, "…" included.
const maxRejectionText = 1024
