//go:build linux

package main

import (
	"os"
	"syscall"
)

// pseudoFilesystems are the kernel's interface filesystems, by the magic
// number statfs(2) reports (include/uapi/linux/magic.h): their files are
// not data. procfs and sysfs report a size of 0 for files that have
// content, and some never end or block a reader forever (/proc/kmsg,
// tracefs's trace_pipe); writing one changes the kernel's settings.
var pseudoFilesystems = map[uint32]string{
	0x9fa0:     "procfs",
	0x62656572: "sysfs",
	0x64626720: "debugfs",
	0x74726163: "tracefs",
	0x73636673: "securityfs",
	0x27e0eb:   "cgroupfs",
	0x63677270: "cgroup2fs",
	0x62656570: "configfs",
	0xcafe4a11: "bpffs",
	0xde5e81e4: "efivarfs",
	0x6165676c: "pstorefs",
	0xf97cff8c: "selinuxfs",
	0x42494e4d: "binfmt_misc",
}

// pseudoFS names the kernel pseudo-filesystem path is on, or is "" when
// it is on another filesystem or cannot be asked.
func pseudoFS(path string) string {
	var st syscall.Statfs_t
	if err := syscall.Statfs(path, &st); err != nil {
		return ""
	}
	return pseudoFilesystems[uint32(st.Type)]
}

// pseudoFSOf is pseudoFS for an open file.
func pseudoFSOf(f *os.File) string {
	rc, err := f.SyscallConn()
	if err != nil {
		return ""
	}
	var st syscall.Statfs_t
	var serr error
	if err := rc.Control(func(fd uintptr) { serr = syscall.Fstatfs(int(fd), &st) }); err != nil || serr != nil {
		return ""
	}
	return pseudoFilesystems[uint32(st.Type)]
}
