// Package fusectl aborts FUSE connections through the kernel's fuse control
// file system (/sys/fs/fuse/connections), mounting it first where the
// machine did not (containers and minimal systems without systemd), and
// mounts and unmounts them through the fusermount3 helper for users who may
// not call mount(2) themselves.
package fusectl
