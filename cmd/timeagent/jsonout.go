package main

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"time"
)

// schemaVersion is the version of every JSON document timeagent prints.
const schemaVersion = 1

func writeJSON(w io.Writer, v any) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	enc.SetEscapeHTML(false)
	return enc.Encode(v)
}

// jsonTime formats a time for JSON (RFC 3339, UTC), empty for the zero time.
func jsonTime(t time.Time) string {
	if t.IsZero() {
		return ""
	}
	return t.UTC().Format(time.RFC3339Nano)
}

// writeJSONList writes doc as writeJSON does, with the array field named
// field (empty in doc) holding items. Each item is encoded on its own and
// written as it is made: a log of 10,000 tasks was one 4 MB buffer encoded,
// then indented into another, which took most of the command's time.
func writeJSONList[T any](w io.Writer, doc any, field string, items []T) error {
	var head bytes.Buffer
	if err := writeJSON(&head, doc); err != nil {
		return err
	}
	empty := []byte(fmt.Sprintf("\n  %q: []", field))
	at := bytes.Index(head.Bytes(), empty)
	if at < 0 || bytes.Count(head.Bytes(), empty) != 1 {
		return fmt.Errorf("write JSON: field %q is not an empty array of the document", field)
	}
	if len(items) == 0 {
		_, err := w.Write(head.Bytes())
		return err
	}
	bw := bufio.NewWriterSize(w, 64<<10)
	bw.Write(head.Bytes()[:at+len(empty)-1]) // up to and with the '['
	var item bytes.Buffer
	enc := json.NewEncoder(&item)
	enc.SetIndent("    ", "  ")
	enc.SetEscapeHTML(false)
	for i, v := range items {
		item.Reset()
		if err := enc.Encode(v); err != nil {
			return fmt.Errorf("write JSON: %w", err)
		}
		if i > 0 {
			bw.WriteByte(',')
		}
		bw.WriteString("\n    ")
		bw.Write(bytes.TrimSuffix(item.Bytes(), []byte("\n")))
	}
	bw.WriteString("\n  ]")
	bw.Write(head.Bytes()[at+len(empty):])
	return bw.Flush()
}
