// Package fs is the copy-on-write overlay of a fuse session: a go-fuse
// filesystem mounted over the root's own path whose lower tree is the root
// directory opened before the mount, and whose upper layer lives in a private
// staging directory of the state dir (never inside the root).
//
// The view of a path is its upper object if there is one, else the lower
// object unless a whiteout hides it or an ancestor is opaque (a directory
// removed and created again). The lower tree is read through a directory fd
// with openat2(RESOLVE_BENEATH|RESOLVE_NO_SYMLINKS) and fstatat on Linux; on
// darwin through openat with O_NOFOLLOW (nothing but the overlay can reach
// the lower tree while it is mounted, so intermediate components are the
// directories the overlay resolved). Nothing is ever written to the lower
// tree: the session applies the journal's state to it after the run.
//
// Recording: the first change of a path in a task records its state before
// the change (hashing lower content into the journal) as the task's before;
// every change marks the path, and its after state (its state at that time)
// is in the journal before the operation returns to the agent: unlink,
// rename, mkdir, symlink, chmod, truncate at once, and a file written
// through an open handle at its close or fsync (or within 50 ms while it
// stays open). Records are written without a sync, which survives a kill;
// fsync, fdatasync and a directory's fsync also sync the journal before
// they return, so what the agent synced survives a power cut. A path back at its before state is dropped from the
// layer. A renamed directory is copied up whole, so every descendant is
// recorded under its old path (absent) and its new one. Hard links are
// copies; extended attributes are kept in the view but not in node states.
//
// Reads of untouched files go to the lower tree; a read-only open opens the
// lower file only when the kernel's page cache misses. Files in the upper
// tree are opened with kernel passthrough (passthrough.go): the kernel reads
// and writes the upper file itself. Lower files are not: a copy-up cannot
// move a reader the kernel bound to the lower file, and the kernel refuses
// to mix passed and cached opens of one inode.
//
// Requests reach the overlay through FUSE over io_uring where the kernel
// allows it (uring_linux.go: one queue per CPU, served on that CPU), else by
// reading /dev/fuse. Directories are read without OPENDIR (dirread_linux.go),
// so the kernel keeps their listings and asks again only after a change.
//
// Locks, in the order they are taken (never the other way round):
//
//  1. Overlay.wmu, read-locked by each content write, locked by Checkpoint
//     and SetView;
//  2. Overlay.mu, the namespace lock: every lookup, open and change holds
//     it while it reads or changes the view's maps and the upper tree;
//  3. node.fmu, a node's open files and handles;
//  4. Overlay.hmu, the cache of upper files' blobs.
//
// Content I/O runs with none of them held (content.go): a lower file being
// hashed or copied up is marked busy in Overlay.busy, under mu, and an
// operation that needs the same path releases mu and waits for the mark to
// go; the holder of a mark takes mu only to drop it, and never waits for
// another mark. Written upper files are hashed before their record is
// written under mu (prehash). The kernel's cache invalidations
// (NotifyContent, NotifyEntry) are sent with no lock held: the kernel may
// wait for a request that wants mu.
//
// The package owns the FUSE nodes and the upper layer. It must not know about
// the CLI. go-fuse's own fs package is imported as fusefs everywhere.
package fs
