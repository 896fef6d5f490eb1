package server_test

import "syscall"

// setRecvBuffer sets a socket's receive buffer to n bytes.
func setRecvBuffer(fd uintptr, n int) error {
	return syscall.SetsockoptInt(syscall.Handle(fd), syscall.SOL_SOCKET, syscall.SO_RCVBUF, n)
}
