// Package xattr copies the extended attributes of one file to another
// (Linux; elsewhere Copy does nothing). The overlay keeps a file's
// attributes through its copy-up, and an apply keeps the attributes of a
// file it rewrites.
package xattr
