package cow

import (
	"os"
	"path"
	"strings"
	"sync"
)

// maxOpenDirs is how many directory handles a dirCache keeps open at most;
// beyond it (or beyond a quarter of the process's open-file limit, see
// openDirLimit) the handles not in use are closed.
const maxOpenDirs = 4096

// testDirLimit, when positive (tests), replaces openDirLimit.
var testDirLimit int

// dirCache keeps the directories of one apply or drift check open, so each
// directory is opened once, relative to its already-open parent, instead of
// by a walk from the root for every path. Every component is opened with
// O_NOFOLLOW (openChild), so a symlink is never followed. Handles given out
// by get are pinned until release; forget drops a removed directory and
// everything below it. It is safe for concurrent use.
type dirCache struct {
	root *os.Root
	max  int // how many handles to keep open
	mu   sync.Mutex
	dirs map[string]*cachedDir     // by relative path
	held map[*dirHandle]*cachedDir // every handle not yet closed
}

type cachedDir struct {
	d       *dirHandle
	refs    int
	dropped bool // forgotten while pinned: closed on the last release
}

func newDirCache(root *os.Root) *dirCache {
	limit := openDirLimit()
	if testDirLimit > 0 {
		limit = testDirLimit
	}
	return &dirCache{root: root, max: limit, dirs: map[string]*cachedDir{}, held: map[*dirHandle]*cachedDir{}}
}

// get returns the open directory rel ("." for the root), pinned until
// release. A missing directory, a non-directory or a symlink anywhere on the
// way is an error for which isNotExist holds.
func (c *dirCache) get(rel string) (*dirHandle, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.getLocked(rel)
}

func (c *dirCache) getLocked(rel string) (*dirHandle, error) {
	if e, ok := c.dirs[rel]; ok {
		e.refs++
		return e.d, nil
	}
	var d *dirHandle
	var err error
	if rel == "." {
		d, err = openDirHandle(c.root, ".")
	} else {
		var parent *dirHandle
		if parent, err = c.getLocked(path.Dir(rel)); err != nil {
			return nil, err
		}
		d, err = openChild(parent, path.Base(rel))
		c.releaseLocked(parent)
	}
	if err != nil {
		return nil, err
	}
	if len(c.dirs) >= c.max {
		c.evictLocked()
	}
	e := &cachedDir{d: d, refs: 1}
	c.dirs[rel] = e
	c.held[d] = e
	return d, nil
}

// evictLocked closes every handle not in use.
func (c *dirCache) evictLocked() {
	for rel, e := range c.dirs {
		if e.refs == 0 {
			delete(c.dirs, rel)
			delete(c.held, e.d)
			e.d.close()
		}
	}
}

// release unpins a handle get returned.
func (c *dirCache) release(d *dirHandle) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.releaseLocked(d)
}

func (c *dirCache) releaseLocked(d *dirHandle) {
	e, ok := c.held[d]
	if !ok {
		return
	}
	e.refs--
	if e.refs <= 0 && e.dropped {
		delete(c.held, d)
		d.close()
	}
}

// forget drops rel and every directory below it (they were removed): a
// later get opens whatever is there then.
func (c *dirCache) forget(rel string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	for k, e := range c.dirs {
		if rel != "." && k != rel && !strings.HasPrefix(k, rel+"/") {
			continue
		}
		delete(c.dirs, k)
		if e.refs > 0 {
			e.dropped = true
			continue
		}
		delete(c.held, e.d)
		e.d.close()
	}
}

// close closes every handle, pinned or not.
func (c *dirCache) close() {
	c.mu.Lock()
	defer c.mu.Unlock()
	for d := range c.held {
		d.close()
	}
	c.dirs = map[string]*cachedDir{}
	c.held = map[*dirHandle]*cachedDir{}
}

// lstat stats rel without following a final symlink.
func (c *dirCache) lstat(rel string) (statInfo, error) {
	d, err := c.get(path.Dir(rel))
	if err != nil {
		return statInfo{}, err
	}
	defer c.release(d)
	return d.lstat(path.Base(rel))
}

// isDir reports whether dir is (still) a directory, to tell "the parent is
// a file now" (every child absent) from a real error.
func (c *dirCache) isDir(dir string) bool {
	st, err := c.lstat(dir)
	return err == nil && st.kind == dirKind
}
