package cow

import (
	"fmt"
	"os"
	"runtime"
	"sort"
	"sync"
	"sync/atomic"
	"time"

	"github.com/timeagent-dev/timeagent/journal"
)

// racyWindow: a file whose modification or change time is this close to the
// moment a scan read it could change again within the same timestamp tick
// without its stat fields changing. Its cache entry gets racyCtime so that
// the next scan reads it again instead of trusting the cache.
var racyWindow = time.Second

// racyCtime marks a stat entry that must never satisfy the cache.
const racyCtime = -1

// readHook, when set (by tests), is called with the path of every file whose
// content a scan or a drift check reads.
var readHook func(rel string)

// maxReadAttempts bounds the re-reads of a file that keeps changing while it
// is being read; the last read is kept, marked racy.
const maxReadAttempts = 4

// openDirs bounds the directories a scan holds open at once.
const openDirs = 64

// readChunk is how many files of one directory one reader takes at a time.
const readChunk = 16

// Scan walks the whole tree under root and stores every file's content in
// blobs (skipping files unchanged per the cache). Symlinks are recorded, never
// followed. Skipped kinds (sockets, devices) are returned in Skipped.
func Scan(root *os.Root, blobs Blobs, opts ScanOptions) (m Manifest, skipped []string, err error) {
	workers := opts.Workers
	if workers <= 0 {
		workers = max(4, 2*runtime.GOMAXPROCS(0))
	}
	s := &scanner{
		root:  root,
		blobs: blobs,
		opts:  opts,
		work:  make(chan struct{}, workers),
		dirs:  make(chan struct{}, openDirs),
		m:     make(Manifest, len(opts.Cache)),
	}
	if p := opts.Progress; p != nil {
		total := int64(-1)
		if len(opts.Cache) > 0 {
			total = int64(len(opts.Cache))
		}
		p.Start("scanning", total)
		defer p.Done()
	}
	s.wg.Add(1)
	go s.walkDir(".")
	s.wg.Wait()
	if s.err != nil {
		return nil, nil, s.err
	}
	sort.Strings(s.skipped)
	if opts.HardLinks != nil {
		sort.Strings(s.hardLinks)
		for _, p := range s.hardLinks {
			opts.HardLinks(p)
		}
	}
	return s.m, s.skipped, nil
}

type scanner struct {
	root  *os.Root
	blobs Blobs
	opts  ScanOptions
	work  chan struct{} // one token per running reader
	dirs  chan struct{} // one token per open directory
	wg    sync.WaitGroup

	mu        sync.Mutex
	m         Manifest
	skipped   []string
	hardLinks []string
	err       error
	failed    atomic.Bool
}

func (s *scanner) fail(err error) {
	s.mu.Lock()
	if s.err == nil {
		s.err = err
	}
	s.mu.Unlock()
	s.failed.Store(true)
}

func (s *scanner) record(p string, e journal.StatEntry) {
	s.mu.Lock()
	s.m[p] = e
	s.mu.Unlock()
	if s.opts.Progress != nil {
		s.opts.Progress.Add(1)
	}
}

// fileJob is a file of one directory whose content must be read.
type fileJob struct {
	name, path string
}

// walkDir lists one directory, records its entries and reads the files the
// cache does not vouch for; subdirectories are walked concurrently.
func (s *scanner) walkDir(rel string) {
	defer s.wg.Done()
	if s.failed.Load() {
		return
	}
	s.dirs <- struct{}{}
	defer func() { <-s.dirs }()
	s.work <- struct{}{}
	d, err := openDirHandle(s.root, rel)
	if err != nil {
		<-s.work
		if rel != "." && isNotExist(err) {
			return // removed while the scan ran
		}
		s.fail(fmt.Errorf("scan %s: %w", rel, err))
		return
	}
	defer d.close()
	names, err := d.names()
	if err != nil {
		<-s.work
		s.fail(fmt.Errorf("scan %s: %w", rel, err))
		return
	}
	var jobs []fileJob
	for _, name := range names {
		p := joinRel(rel, name)
		if s.opts.Exclude != nil && s.opts.Exclude(p) {
			continue
		}
		st, err := d.lstat(name)
		if err != nil {
			if isNotExist(err) {
				continue
			}
			<-s.work
			s.fail(fmt.Errorf("scan %s: %w", p, err))
			return
		}
		if st.kind == fileKind {
			if st.nlink > 1 && s.opts.HardLinks != nil {
				s.mu.Lock()
				s.hardLinks = append(s.hardLinks, p)
				s.mu.Unlock()
			}
			if e, ok := s.opts.Cache[p]; ok && st.matches(e) {
				s.record(p, e)
			} else {
				jobs = append(jobs, fileJob{name: name, path: p})
			}
			continue
		}
		if err := s.other(d, name, p, st); err != nil {
			<-s.work
			s.fail(err)
			return
		}
	}
	<-s.work
	var readers sync.WaitGroup
	for i := 0; i < len(jobs); i += readChunk {
		chunk := jobs[i:min(i+readChunk, len(jobs))]
		readers.Add(1)
		go func() {
			defer readers.Done()
			s.work <- struct{}{}
			defer func() { <-s.work }()
			for _, j := range chunk {
				if s.failed.Load() {
					return
				}
				if err := s.readFile(d, j.name, j.path); err != nil {
					s.fail(err)
					return
				}
			}
		}()
	}
	readers.Wait()
}

// other records a directory, symlink, fifo or skipped node.
func (s *scanner) other(d *dirHandle, name, p string, st statInfo) error {
	switch {
	case st.skip:
		s.mu.Lock()
		s.skipped = append(s.skipped, p)
		s.mu.Unlock()
	case st.kind == dirKind:
		s.record(p, st.entry(NodeState{Kind: dirKind, Mode: st.mode}))
		s.wg.Add(1)
		go s.walkDir(p)
	case st.kind == symlinkKind:
		target, err := d.readlink(name)
		if err != nil {
			if isNotExist(err) {
				return nil
			}
			return fmt.Errorf("scan %s: %w", p, err)
		}
		s.record(p, st.entry(NodeState{Kind: symlinkKind, Target: target}))
	case st.kind == fifoKind:
		s.record(p, st.entry(NodeState{Kind: fifoKind, Mode: st.mode}))
	}
	return nil
}

// readFile stores one file's content, re-reading it while it changes under
// the reader, and records it.
func (s *scanner) readFile(d *dirHandle, name, p string) error {
	e, ok, err := readFileEntry(d, s.blobs, name, p)
	if err != nil {
		return err
	}
	if !ok {
		// Not a regular file any more: record whatever it is now.
		st, err := d.lstat(name)
		if err != nil {
			if isNotExist(err) {
				return nil
			}
			return fmt.Errorf("scan %s: %w", p, err)
		}
		if st.kind == fileKind {
			return fmt.Errorf("scan %s: file keeps changing type", p)
		}
		return s.other(d, name, p, st)
	}
	s.record(p, e)
	return nil
}

// readFileEntry reads the regular file name of d into blobs and returns its
// entry. ok is false (with a nil error) when the path vanished or is no
// longer a regular file.
func readFileEntry(d *dirHandle, blobs Blobs, name, p string) (e journal.StatEntry, ok bool, err error) {
	for attempt := 1; ; attempt++ {
		now := time.Now().UnixNano()
		f, err := d.openFile(name)
		if err != nil {
			if isNotExist(err) || isNotRegular(err) {
				return e, false, nil
			}
			return e, false, fmt.Errorf("scan %s: %w", p, err)
		}
		before, err := fstat(f)
		if err != nil || before.kind != fileKind {
			f.Close()
			if err != nil {
				return e, false, fmt.Errorf("scan %s: %w", p, err)
			}
			return e, false, nil
		}
		if readHook != nil {
			readHook(p)
		}
		ref, err := blobs.PutBlob(f)
		if err != nil {
			f.Close()
			return e, false, fmt.Errorf("scan %s: %w", p, err)
		}
		after, err := fstat(f)
		f.Close()
		if err != nil {
			return e, false, fmt.Errorf("scan %s: %w", p, err)
		}
		stable := before.size == after.size && before.mtimeNs == after.mtimeNs &&
			before.ctimeNs == after.ctimeNs && ref.Size == after.size
		if !stable && attempt < maxReadAttempts {
			continue
		}
		e = after.entry(NodeState{Kind: fileKind, Mode: after.mode, Size: ref.Size, Blob: ref})
		if !stable || after.ctimeNs > now-int64(racyWindow) || after.mtimeNs > now-int64(racyWindow) {
			e.CtimeNs = racyCtime
		}
		return e, true, nil
	}
}
