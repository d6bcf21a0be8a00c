package journal

import (
	"encoding/binary"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"runtime/debug"

	"github.com/dgraph-io/badger/v4"
	"github.com/dgraph-io/badger/v4/pb"
	"github.com/dgraph-io/badger/v4/table"
	"github.com/dgraph-io/badger/v4/y"
	"google.golang.org/protobuf/proto"
)

// checkTables reads the manifest and checks the footer and index checksum
// of every table it lists, before badger opens them. Badger opens tables in
// goroutines of its own, where a damaged footer is an unrecoverable panic
// (or log.Fatal) that would kill the process; found here, it is ErrCorrupt.
// The cost is one read of each table's index, which badger reads anyway.
func checkTables(dir string, opt badger.Options) (err error) {
	defer debug.SetPanicOnFault(debug.SetPanicOnFault(true))
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("%w: reading the manifest panicked: %v", ErrCorrupt, r)
		}
	}()
	f, err := os.Open(filepath.Join(dir, "MANIFEST"))
	if errors.Is(err, fs.ErrNotExist) {
		return nil // a new journal
	}
	if err != nil {
		return err
	}
	defer f.Close()
	m, valid, err := badger.ReplayManifestFile(f, opt.ExternalMagicVersion, opt)
	if err != nil {
		return fmt.Errorf("%w: manifest: %v", ErrCorrupt, err)
	}
	if fi, err := f.Stat(); err == nil && valid < fi.Size() {
		// The manifest ends in bytes badger will cut off. Tables that are
		// on disk but no longer listed would be deleted by badger as
		// leftovers of an interrupted compaction, losing their records.
		if orphan := unlistedTable(dir, m); orphan != "" {
			return fmt.Errorf("%w: manifest damaged after byte %d of %d: table %s is not listed",
				ErrCorrupt, valid, fi.Size(), orphan)
		}
	}
	for id := range m.Tables {
		if err := checkTable(table.NewFilename(id, dir)); err != nil {
			return err
		}
	}
	return nil
}

// unlistedTable returns a table file in dir that m does not list.
func unlistedTable(dir string, m badger.Manifest) string {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return ""
	}
	for _, e := range entries {
		if id, ok := table.ParseFileID(e.Name()); ok {
			if _, listed := m.Tables[id]; !listed {
				return e.Name()
			}
		}
	}
	return ""
}

// checkTable checks one table's footer (checksum length, checksum, index
// length) and the checksum of its index, as badger's initIndex reads them.
func checkTable(name string) error {
	f, err := os.Open(name)
	if errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("%w: table %s listed in the manifest is missing", ErrCorrupt, filepath.Base(name))
	}
	if err != nil {
		return err
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return err
	}
	bad := func(what string) error {
		return fmt.Errorf("%w: table %s: %s", ErrCorrupt, filepath.Base(name), what)
	}
	pos := fi.Size()
	readAt := func(n int64) ([]byte, bool) {
		if n < 0 || n > pos {
			return nil, false
		}
		pos -= n
		b := make([]byte, n)
		if _, err := f.ReadAt(b, pos); err != nil {
			return nil, false
		}
		return b, true
	}
	b, ok := readAt(4)
	if !ok {
		return bad("too short")
	}
	chkLen := int64(binary.BigEndian.Uint32(b))
	b, ok = readAt(chkLen)
	if !ok {
		return bad("bad checksum length")
	}
	var chk pb.Checksum
	if err := proto.Unmarshal(b, &chk); err != nil {
		return bad("bad checksum: " + err.Error())
	}
	b, ok = readAt(4)
	if !ok {
		return bad("too short for its index")
	}
	b, ok = readAt(int64(binary.BigEndian.Uint32(b)))
	if !ok {
		return bad("bad index length")
	}
	if err := y.VerifyChecksum(b, &chk); err != nil {
		return bad("index checksum mismatch")
	}
	return nil
}
