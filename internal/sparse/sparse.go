// Package sparse writes files in which whole blocks of zero bytes stay holes,
// as cp --sparse=auto leaves them: restoring or copying a sparse file (a disk
// image, a database preallocated with ftruncate) must not allocate its holes.
package sparse

import (
	"bytes"
	"fmt"
	"os"
)

// BlockSize is the unit of holes: a block of this many zero bytes, at an
// offset that is a multiple of it, is skipped instead of written.
const BlockSize = 4096

var zeroBlock [BlockSize]byte

// Writer writes sequentially into a new, empty file, leaving aligned zero
// blocks as holes. Finish must be called after the last Write: it sets the
// file's length, which a trailing hole does not.
type Writer struct {
	f   *os.File
	off int64
}

// NewWriter returns a Writer for f, which must be empty.
func NewWriter(f *os.File) *Writer { return &Writer{f: f} }

// Write writes b at the current end, skipping aligned zero blocks and
// writing each run of other bytes with one call.
func (w *Writer) Write(b []byte) (int, error) {
	n := len(b)
	start := 0 // first byte of the pending data run
	i := 0
	for i < len(b) {
		// The block containing offset w.off+i, cut to b.
		k := BlockSize - int((w.off+int64(i))%BlockSize)
		if k > len(b)-i {
			k = len(b) - i
		}
		if k == BlockSize && bytes.Equal(b[i:i+k], zeroBlock[:]) {
			if err := w.flush(b[start:i], int64(start)); err != nil {
				return 0, err
			}
			start = i + k
		}
		i += k
	}
	if err := w.flush(b[start:], int64(start)); err != nil {
		return 0, err
	}
	w.off += int64(n)
	return n, nil
}

// flush writes a data run found at offset rel of the current Write.
func (w *Writer) flush(run []byte, rel int64) error {
	if len(run) == 0 {
		return nil
	}
	if _, err := w.f.WriteAt(run, w.off+rel); err != nil {
		return fmt.Errorf("write %s: %w", w.f.Name(), err)
	}
	return nil
}

// Size returns the number of bytes written so far (holes included).
func (w *Writer) Size() int64 { return w.off }

// Finish gives the file its full length, covering a trailing hole.
func (w *Writer) Finish() error {
	if err := w.f.Truncate(w.off); err != nil {
		return fmt.Errorf("write %s: %w", w.f.Name(), err)
	}
	return nil
}
