package journal

import (
	"encoding/binary"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"runtime/debug"
	"strings"

	"github.com/dgraph-io/badger/v4"
	"github.com/dgraph-io/badger/v4/options"
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
// It returns the number of tables in level 0.
func checkTables(dir string, opt badger.Options) (level0 int, err error) {
	defer debug.SetPanicOnFault(debug.SetPanicOnFault(true))
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("%w: reading the manifest panicked: %v", ErrCorrupt, r)
		}
	}()
	f, err := os.Open(filepath.Join(dir, "MANIFEST"))
	if errors.Is(err, fs.ErrNotExist) {
		return 0, nil // a new journal
	}
	if err != nil {
		return 0, err
	}
	defer f.Close()
	m, valid, err := badger.ReplayManifestFile(f, opt.ExternalMagicVersion, opt)
	if err != nil {
		return 0, fmt.Errorf("%w: manifest: %v", ErrCorrupt, err)
	}
	if fi, err := f.Stat(); err == nil && valid < fi.Size() {
		// The manifest ends in bytes badger will cut off. Tables that are
		// on disk but no longer listed would be deleted by badger as
		// leftovers of an interrupted compaction, losing their records.
		if orphan := unlistedTable(dir, m); orphan != "" {
			return 0, fmt.Errorf("%w: manifest damaged after byte %d of %d: table %s is not listed",
				ErrCorrupt, valid, fi.Size(), orphan)
		}
	}
	verified := loadVerified(dir)
	changed := false
	for id, tm := range m.Tables {
		name := table.NewFilename(id, dir)
		if tm.Level == 0 {
			level0++
		}
		size, err := checkTable(name)
		if err != nil {
			return 0, err
		}
		if verified[id] == size || tm.KeyID != 0 {
			continue
		}
		if err := checkBlocks(name, id, tm.Compression); err != nil {
			return 0, err
		}
		verified[id] = size
		changed = true
	}
	for id := range verified {
		if _, live := m.Tables[id]; !live {
			delete(verified, id)
			changed = true
		}
	}
	if changed {
		saveVerified(dir, verified)
	}
	return level0, nil
}

// verifiedFile lists the tables whose every block checksum was verified,
// one "id size" line each. Tables never change once written, so each is
// read in full once, at the first Open after it appeared: a damaged block
// would otherwise make badger's iterators stop early without an error and
// records would silently go missing. The file is a cache: if it is lost or
// unreadable, every table is verified again.
const verifiedFile = "VERIFIED"

func loadVerified(dir string) map[uint64]int64 {
	out := map[uint64]int64{}
	b, err := os.ReadFile(filepath.Join(dir, verifiedFile))
	if err != nil {
		return out
	}
	for _, line := range strings.Split(string(b), "\n") {
		var id uint64
		var size int64
		if _, err := fmt.Sscanf(line, "%d %d", &id, &size); err == nil {
			out[id] = size
		}
	}
	return out
}

// saveVerified writes the verified set atomically; failing to is harmless.
func saveVerified(dir string, verified map[uint64]int64) {
	var b strings.Builder
	for id, size := range verified {
		fmt.Fprintf(&b, "%d %d\n", id, size)
	}
	tmp := filepath.Join(dir, verifiedFile+".tmp")
	if err := os.WriteFile(tmp, []byte(b.String()), 0o600); err != nil {
		return
	}
	if err := os.Rename(tmp, filepath.Join(dir, verifiedFile)); err != nil {
		_ = os.Remove(tmp)
	}
}

// checkBlocks reads a whole table and verifies the checksum of each block,
// through badger's own table code run here, where its panics on damaged
// blocks can be recovered.
func checkBlocks(name string, id uint64, compression options.CompressionType) (err error) {
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("%w: table %s: a block fails its checksum (badger: %v)", ErrCorrupt, filepath.Base(name), r)
		}
	}()
	data, err := os.ReadFile(name)
	if err != nil {
		return err
	}
	t, err := table.OpenInMemoryTable(data, id, &table.Options{
		ChkMode:     options.OnBlockRead,
		BlockSize:   4 << 10,
		Compression: compression,
	})
	if err != nil {
		return fmt.Errorf("%w: table %s: %v", ErrCorrupt, filepath.Base(name), err)
	}
	if err := t.VerifyChecksum(); err != nil {
		return fmt.Errorf("%w: table %s: %v", ErrCorrupt, filepath.Base(name), err)
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
// length) and the checksum of its index, as badger's initIndex reads them,
// and returns the table's size.
func checkTable(name string) (int64, error) {
	f, err := os.Open(name)
	if errors.Is(err, fs.ErrNotExist) {
		return 0, fmt.Errorf("%w: table %s listed in the manifest is missing", ErrCorrupt, filepath.Base(name))
	}
	if err != nil {
		return 0, err
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return 0, err
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
		return 0, bad("too short")
	}
	chkLen := int64(binary.BigEndian.Uint32(b))
	b, ok = readAt(chkLen)
	if !ok {
		return 0, bad("bad checksum length")
	}
	var chk pb.Checksum
	if err := proto.Unmarshal(b, &chk); err != nil {
		return 0, bad("bad checksum: " + err.Error())
	}
	b, ok = readAt(4)
	if !ok {
		return 0, bad("too short for its index")
	}
	b, ok = readAt(int64(binary.BigEndian.Uint32(b)))
	if !ok {
		return 0, bad("bad index length")
	}
	if err := y.VerifyChecksum(b, &chk); err != nil {
		return 0, bad("index checksum mismatch")
	}
	return fi.Size(), nil
}
