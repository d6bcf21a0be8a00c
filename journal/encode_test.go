package journal

import (
	"bytes"
	"encoding/json"
	"errors"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/timeagent-dev/timeagent/tasks"
)

func TestChangeEncodingRoundTrip(t *testing.T) {
	states := sampleStates()
	for i, before := range states {
		for k, after := range states {
			c := Change{Path: "p", Before: before, After: after}
			got, err := decodeChange("p", encodeChange(c))
			if err != nil {
				t.Fatalf("%d/%d: %v", i, k, err)
			}
			if !reflect.DeepEqual(got, c) {
				t.Fatalf("%d/%d: got %+v want %+v", i, k, got, c)
			}
		}
	}
}

func TestStatEntryEncodingRoundTrip(t *testing.T) {
	for _, e := range []StatEntry{
		{},
		{Kind: File, Size: 1 << 50, MtimeNs: -1, CtimeNs: 1<<63 - 1, Ino: 1<<64 - 1, Mode: 0o7777, Blob: BlobRef{Hash: 9, Size: 1 << 50, Seq: 1}},
		{Kind: Symlink, Target: "x/y", Mode: 0o777},
		{Kind: Fifo, Mode: 0o644},
	} {
		got, err := decodeStatEntry(encodeStatEntry(e))
		if err != nil || !reflect.DeepEqual(got, e) {
			t.Errorf("%+v: got %+v, %v", e, got, err)
		}
	}
}

func TestChunkListEncodingRoundTrip(t *testing.T) {
	for _, l := range [][]chunkRef{
		{},
		{{Hash: 1, Len: 1}},
		{{Hash: ^uint64(0), Len: ChunkSize, Seq: 65535}, {Hash: 0, Len: 0, Seq: 0}},
	} {
		got, err := decodeChunkList(encodeChunkList(l))
		if err != nil || len(got) != len(l) || (len(l) > 0 && !reflect.DeepEqual(got, l)) {
			t.Errorf("%v: got %v, %v", l, got, err)
		}
	}
}

func TestDecodeRejectsDamage(t *testing.T) {
	c := encodeChange(Change{Before: sampleStates()[1], After: sampleStates()[5]})
	for i := 0; i < len(c); i++ {
		if _, err := decodeChange("p", c[:i]); err == nil {
			t.Errorf("truncated to %d bytes: no error", i)
		}
	}
	if _, err := decodeChange("p", append(c, 0)); err == nil {
		t.Error("trailing byte accepted")
	}
	bad := append([]byte(nil), c...)
	bad[0] = 2
	if _, err := decodeChange("p", bad); err == nil {
		t.Error("unknown format accepted")
	}
	// A huge chunk count with no bytes behind it must not allocate.
	huge := []byte{formatV1, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x7f}
	if _, err := decodeChunkList(huge); err == nil {
		t.Error("huge count accepted")
	}
}

func FuzzDecodeChange(f *testing.F) {
	for _, s := range sampleStates() {
		f.Add(encodeChange(Change{Before: s, After: sampleStates()[2]}))
	}
	f.Add([]byte{})
	f.Fuzz(func(t *testing.T, b []byte) {
		c, err := decodeChange("p", b)
		if err != nil {
			return
		}
		// What decodes must encode back to a value that decodes the same.
		c2, err := decodeChange("p", encodeChange(c))
		if err != nil || !reflect.DeepEqual(c, c2) {
			t.Fatalf("re-encode: %+v vs %+v (%v)", c, c2, err)
		}
	})
}

// TestTaskRecord: a task encodes and decodes to itself, the JSON records of
// older journals still read, and damaged records are ErrCorrupt.
func TestTaskRecord(t *testing.T) {
	created := time.Date(2026, 12, 5, 9, 1, 2, 3, time.FixedZone("X", 3600))
	cases := []tasks.Task{
		{},
		{ID: 7, Parent: 3, Summary: "fix the «lexer»", Session: 2, Kind: tasks.KindAgent, Created: created, Ended: created.Add(time.Minute), Files: 12, Visit: 99},
		{ID: 1 << 40, Kind: tasks.KindOutside, Created: created.UTC(), Summary: strings.Repeat("ü", tasks.SummaryMax)},
	}
	for _, want := range cases {
		b, err := encodeTask(want)
		if err != nil {
			t.Fatal(err)
		}
		got, err := decodeTask("t", b)
		if err != nil || !got.Created.Equal(want.Created) || !got.Ended.Equal(want.Ended) {
			t.Fatalf("round trip of %+v: %+v, %v", want, got, err)
		}
		got.Created, got.Ended, want.Created, want.Ended = time.Time{}, time.Time{}, time.Time{}, time.Time{}
		if got != want {
			t.Errorf("round trip: got %+v, want %+v", got, want)
		}
		js, _ := json.Marshal(cases[1])
		old, err := decodeTask("t", js)
		if err != nil || old.Summary != cases[1].Summary || !old.Created.Equal(created) || old.Files != 12 {
			t.Errorf("a JSON task record of an older journal: %+v, %v", old, err)
		}
		for i := range b {
			if _, err := decodeTask("t", b[:i]); !errors.Is(err, ErrCorrupt) {
				t.Errorf("a record cut at %d of %d bytes: %v, want ErrCorrupt", i, len(b), err)
			}
		}
		if _, err := decodeTask("t", append(b, 0)); !errors.Is(err, ErrCorrupt) {
			t.Errorf("trailing byte: %v", err)
		}
	}
}

func FuzzDecodeTask(f *testing.F) {
	b, _ := encodeTask(tasks.Task{ID: 3, Parent: 1, Summary: "s", Kind: tasks.KindAgent, Created: time.Unix(5, 6), Files: 2, Visit: 4})
	f.Add(b)
	f.Add([]byte(`{"id":3,"parent":1,"summary":"s"}`))
	f.Add([]byte{})
	f.Fuzz(func(t *testing.T, b []byte) {
		task, err := decodeTask("t", b)
		if err != nil {
			if !errors.Is(err, ErrCorrupt) {
				t.Fatalf("error %v is not ErrCorrupt", err)
			}
			return
		}
		// What decodes must encode back to a value that decodes the same.
		b2, err := encodeTask(task)
		if err != nil {
			t.Fatal(err)
		}
		task2, err := decodeTask("t", b2)
		if err != nil || !task2.Created.Equal(task.Created) || !task2.Ended.Equal(task.Ended) {
			t.Fatalf("re-encode: %+v vs %+v (%v)", task, task2, err)
		}
		task.Created, task.Ended, task2.Created, task2.Ended = time.Time{}, time.Time{}, time.Time{}, time.Time{}
		if task != task2 {
			t.Fatalf("re-encode: %+v vs %+v", task, task2)
		}
	})
}

func FuzzDecodeStatEntry(f *testing.F) {
	f.Add(encodeStatEntry(StatEntry{Kind: File, Size: 5, Blob: BlobRef{Hash: 1, Size: 5}}))
	f.Add(encodeStatEntry(StatEntry{Kind: Symlink, Target: "abc"}))
	f.Add([]byte{})
	f.Fuzz(func(t *testing.T, b []byte) {
		e, err := decodeStatEntry(b)
		if err != nil {
			return
		}
		e2, err := decodeStatEntry(encodeStatEntry(e))
		if err != nil || !reflect.DeepEqual(e, e2) {
			t.Fatalf("re-encode: %+v vs %+v (%v)", e, e2, err)
		}
	})
}

func FuzzDecodeChunkList(f *testing.F) {
	f.Add(encodeChunkList([]chunkRef{{Hash: 1, Len: 10}, {Hash: 2, Len: ChunkSize, Seq: 3}}))
	f.Add(encodeChunkList(nil))
	f.Fuzz(func(t *testing.T, b []byte) {
		l, err := decodeChunkList(b)
		if err != nil {
			return
		}
		l2, err := decodeChunkList(encodeChunkList(l))
		if err != nil || len(l) != len(l2) {
			t.Fatalf("re-encode: %v vs %v (%v)", l, l2, err)
		}
	})
}

func FuzzDecodeChunk(f *testing.F) {
	for _, b := range [][]byte{nil, []byte("hello"), compressible(5000), randomBytes(300)} {
		enc, err := encodeChunk(b)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(enc, len(b))
	}
	f.Fuzz(func(t *testing.T, v []byte, n int) {
		if n < 0 || n > ChunkSize {
			return
		}
		out, err := decodeChunk(v, n, make([]byte, 0, n))
		if err == nil && len(out) != n {
			t.Fatalf("decoded %d bytes, want %d", len(out), n)
		}
	})
}

func FuzzChunkRoundTrip(f *testing.F) {
	f.Add([]byte("aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa"))
	f.Fuzz(func(t *testing.T, b []byte) {
		if len(b) > ChunkSize {
			return
		}
		enc, err := encodeChunk(b)
		if err != nil {
			t.Fatal(err)
		}
		out, err := decodeChunk(enc, len(b), make([]byte, 0, len(b)))
		if err != nil || !bytes.Equal(out, b) {
			t.Fatalf("round trip: %v", err)
		}
	})
}
