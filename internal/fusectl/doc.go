// Package fusectl aborts FUSE connections through the kernel's fuse control
// file system (/sys/fs/fuse/connections), mounting it first where the
// machine did not (containers and minimal systems without systemd).
package fusectl
