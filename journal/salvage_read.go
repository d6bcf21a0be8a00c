package journal

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"os"
	"path/filepath"
	"runtime/debug"
	"sort"
	"strings"

	"github.com/dgraph-io/badger/v4"
	"github.com/dgraph-io/badger/v4/options"
	"github.com/dgraph-io/badger/v4/pb"
	"github.com/dgraph-io/badger/v4/table"
	"github.com/dgraph-io/badger/v4/y"
	"google.golang.org/protobuf/proto"

	"github.com/timeagent-dev/timeagent/internal/plural"
)

// lostRange is a run of keys a damaged table block held: every key from lo
// to hi (user keys, both included) may have had a version there, at most
// maxVersion, that is now lost. A version of such a key found elsewhere is
// trustworthy only when it is newer than maxVersion (the lost one could
// have been a newer value or a deletion). whole marks a table whose index
// is unreadable: its keys and versions are unknown.
type lostRange struct {
	table      string
	lo, hi     []byte
	maxVersion uint64
	whole      bool
}

// covers reports whether a record (user key, version) might have been
// superseded by something in the lost range.
func (r lostRange) covers(key []byte, version uint64) bool {
	if r.whole {
		return false // unknowable: reported, not used to drop records
	}
	return bytes.Compare(key, r.lo) >= 0 && bytes.Compare(key, r.hi) <= 0 && version <= r.maxVersion
}

// readable is what prepareRead found and made of a damaged journal.
type readable struct {
	problems []string
	lost     []lostRange
}

// prepareRead builds in work a badger directory that opens and reads
// without error from the journal in dir, which it never changes: the value
// logs and memtables are copied as they are, KEYREGISTRY is left out (the
// journal is not encrypted, so it holds no key; badger makes a new one),
// every table is copied or, when a block fails its checksum, rebuilt from
// its readable blocks, and a new MANIFEST lists them (at their recorded
// levels, or all in level 0 when the manifest itself is damaged: badger
// orders versions across tables, so level 0 reads them right).
func prepareRead(dir, work string) (rd readable, err error) {
	if err := os.MkdirAll(work, 0o700); err != nil {
		return rd, err
	}
	opt := badgerOptions(dir)
	levels, compression, mErr := readManifest(dir, opt)
	if mErr != nil {
		rd.problems = append(rd.problems, "MANIFEST: "+mErr.Error()+"; every table found is read")
	}
	if _, err := os.Stat(filepath.Join(dir, badger.KeyRegistryFileName)); err == nil {
		if kerr := checkKeyRegistry(dir, opt); kerr != nil {
			rd.problems = append(rd.problems, "KEYREGISTRY: "+kerr.Error()+"; the journal is not encrypted, so it held nothing")
		}
	}
	entries, err := os.ReadDir(dir)
	if err != nil {
		return rd, err
	}
	manifest := map[uint64]badger.TableManifest{}
	for _, e := range entries {
		name := e.Name()
		if !e.Type().IsRegular() {
			continue
		}
		if strings.HasSuffix(name, ".vlog") || strings.HasSuffix(name, ".mem") {
			if err := copyFile(filepath.Join(dir, name), filepath.Join(work, name)); err != nil {
				return rd, err
			}
			continue
		}
		id, ok := table.ParseFileID(name)
		if !ok {
			continue
		}
		tm, listed := levels[id]
		if mErr == nil && !listed {
			continue // a leftover badger would delete: not part of the journal
		}
		if !listed {
			tm = badger.TableManifest{Level: 0, Compression: compression}
		}
		lost, problem, err := copyTable(filepath.Join(dir, name), filepath.Join(work, name), id, tm.Compression)
		if err != nil {
			return rd, err
		}
		if problem != "" {
			rd.problems = append(rd.problems, name+": "+problem)
		}
		rd.lost = append(rd.lost, lost...)
		if _, err := os.Stat(filepath.Join(work, name)); err == nil {
			manifest[id] = tm
		}
	}
	if err := writeManifest(work, manifest, opt.ExternalMagicVersion); err != nil {
		return rd, err
	}
	return rd, nil
}

// readManifest replays dir's MANIFEST: the tables it lists, and the
// compression its tables use (the default when it lists none).
func readManifest(dir string, opt badger.Options) (tables map[uint64]badger.TableManifest, compression options.CompressionType, err error) {
	compression = opt.Compression
	defer debug.SetPanicOnFault(debug.SetPanicOnFault(true))
	defer func() {
		if r := recover(); r != nil {
			tables, err = nil, fmt.Errorf("reading it panicked: %v", r)
		}
	}()
	f, err := os.Open(filepath.Join(dir, badger.ManifestFilename))
	if err != nil {
		return nil, compression, err
	}
	defer f.Close()
	m, valid, err := badger.ReplayManifestFile(f, opt.ExternalMagicVersion, opt)
	if err != nil {
		return nil, compression, err
	}
	if fi, err := f.Stat(); err == nil && valid < fi.Size() {
		return nil, compression, fmt.Errorf("damaged after byte %d of %d", valid, fi.Size())
	}
	for _, tm := range m.Tables {
		compression = tm.Compression
	}
	return m.Tables, compression, nil
}

// checkKeyRegistry opens dir's key registry read-only, as badger does.
func checkKeyRegistry(dir string, opt badger.Options) (err error) {
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("reading it panicked: %v", r)
		}
	}()
	kr, err := badger.OpenKeyRegistry(badger.KeyRegistryOptions{
		Dir: dir, ReadOnly: true, EncryptionKeyRotationDuration: opt.EncryptionKeyRotationDuration,
	})
	if err != nil {
		return err
	}
	return kr.Close()
}

// copyTable copies a table whose every block verifies; otherwise it writes
// a table of its readable blocks (none at all when even its index is
// damaged) and returns the key ranges of the blocks it lost.
func copyTable(src, dst string, id uint64, compression options.CompressionType) (lost []lostRange, problem string, err error) {
	data, err := os.ReadFile(src)
	if err != nil {
		return nil, "", err
	}
	name := filepath.Base(src)
	if _, err := checkTable(src); err != nil {
		return []lostRange{{table: name, whole: true}}, "unreadable (" + err.Error() + "): its records are lost", nil
	}
	t, err := openTableData(data, id, compression)
	if err != nil {
		return []lostRange{{table: name, whole: true}}, "unreadable (" + err.Error() + "): its records are lost", nil
	}
	if verifyTable(t) == nil {
		return nil, "", writeFileSync(dst, data)
	}
	kept, lost := readBlocks(t, name)
	if len(kept) == 0 {
		return lost, fmt.Sprintf("%d of its blocks fail their checksum, none is readable", len(lost)), nil
	}
	b := table.NewTableBuilder(tableOptions(compression))
	defer b.Close()
	for _, e := range kept {
		b.Add(e.key, e.vs, 0)
	}
	if err := writeFileSync(dst, b.Finish()); err != nil {
		return nil, "", err
	}
	return lost, fmt.Sprintf("%s %s the checksum; the records of the other blocks are kept", plural.Count(len(lost), "block"), plural.Verb(len(lost), "fail")), nil
}

func tableOptions(compression options.CompressionType) table.Options {
	return table.Options{
		ChkMode: options.OnBlockRead, BlockSize: 4 << 10, Compression: compression,
		BloomFalsePositive: 0.01, TableSize: 2 << 20, ZSTDCompressionLevel: 1,
	}
}

func openTableData(data []byte, id uint64, compression options.CompressionType) (t *table.Table, err error) {
	defer func() {
		if r := recover(); r != nil {
			t, err = nil, fmt.Errorf("badger panicked: %v", r)
		}
	}()
	// Opened without block checks (badger reads the last block to learn
	// the table's biggest key: a damaged one would make the whole table
	// unreadable), which are turned on right after: the table keeps a
	// pointer to its options, and every block read from here on is checked.
	// The index checksum was checked by checkTable.
	opt := tableOptions(compression)
	opt.ChkMode = options.NoVerification
	t, err = table.OpenInMemoryTable(data, id, &opt)
	opt.ChkMode = options.OnBlockRead
	return t, err
}

func verifyTable(t *table.Table) (err error) {
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("badger panicked: %v", r)
		}
	}()
	return t.VerifyChecksum()
}

type tableEntry struct {
	key []byte // with its version
	vs  y.ValueStruct
}

// readBlocks reads a table block by block: a block that fails its checksum
// is skipped whole, and the keys it held are known from the index (its
// first key, and the next block's).
func readBlocks(t *table.Table, name string) (kept []tableEntry, lost []lostRange) {
	bases := t.KeySplits(1<<30, nil) // the first key of every block
	for i, base := range bases {
		var next []byte
		if i+1 < len(bases) {
			next = []byte(bases[i+1])
		}
		entries, ok := readBlock(t, []byte(base), next)
		if ok {
			kept = append(kept, entries...)
			continue
		}
		// The last block's keys run to the table's biggest, which was read
		// from that very block: take every key from its first on.
		hi := bytes.Repeat([]byte{0xff}, 1+8+8+2)
		if next != nil {
			hi = y.ParseKey(next)
		}
		lost = append(lost, lostRange{table: name, lo: y.ParseKey([]byte(base)), hi: hi, maxVersion: t.MaxVersion()})
	}
	return kept, lost
}

// readBlock reads the entries from base up to next (nil: to the end); ok
// is false when the block starting at base cannot be read. The entries
// come from one block, which verified as a whole when it was loaded.
func readBlock(t *table.Table, base, next []byte) (entries []tableEntry, ok bool) {
	defer func() {
		if r := recover(); r != nil {
			entries, ok = nil, false
		}
	}()
	it := t.NewIterator(0)
	defer it.Close()
	it.Seek(base)
	if !it.Valid() || !bytes.Equal(it.Key(), base) {
		return nil, false
	}
	for ; it.Valid(); it.Next() {
		if next != nil && y.CompareKeys(it.Key(), next) >= 0 {
			break
		}
		entries = append(entries, tableEntry{key: bytes.Clone(it.Key()), vs: it.ValueCopy()})
	}
	return entries, true
}

// writeManifest writes a MANIFEST listing tables, in the format badger
// reads: magic, then one change set with a length and a CRC.
func writeManifest(dir string, tables map[uint64]badger.TableManifest, extMagic uint16) error {
	ids := make([]uint64, 0, len(tables))
	for id := range tables {
		ids = append(ids, id)
	}
	sort.Slice(ids, func(a, b int) bool { return ids[a] < ids[b] })
	set := pb.ManifestChangeSet{}
	for _, id := range ids {
		tm := tables[id]
		set.Changes = append(set.Changes, &pb.ManifestChange{
			Id: id, Op: pb.ManifestChange_CREATE, Level: uint32(tm.Level), Compression: uint32(tm.Compression),
		})
	}
	body, err := proto.Marshal(&set)
	if err != nil {
		return err
	}
	buf := make([]byte, 16, 16+len(body))
	copy(buf, "Bdgr")
	binary.BigEndian.PutUint16(buf[4:], extMagic)
	binary.BigEndian.PutUint16(buf[6:], 8) // badger v4's manifest version
	binary.BigEndian.PutUint32(buf[8:], uint32(len(body)))
	binary.BigEndian.PutUint32(buf[12:], crc32.Checksum(body, y.CastagnoliCrcTable))
	return writeFileSync(filepath.Join(dir, badger.ManifestFilename), append(buf, body...))
}

func copyFile(src, dst string) error {
	in, err := os.Open(src)
	if err != nil {
		return err
	}
	defer in.Close()
	out, err := os.OpenFile(dst, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		return err
	}
	if _, err := io.Copy(out, in); err != nil {
		out.Close()
		return fmt.Errorf("copy %s: %w", src, err)
	}
	return errors.Join(out.Sync(), out.Close())
}

func writeFileSync(name string, data []byte) error {
	f, err := os.OpenFile(name, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		return err
	}
	if _, err := f.Write(data); err != nil {
		f.Close()
		return fmt.Errorf("write %s: %w", name, err)
	}
	return errors.Join(f.Sync(), f.Close())
}
