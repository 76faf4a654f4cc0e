package agentside

import (
	"os"
	"syscall"
)

func uidOf(info os.FileInfo) uint32 { return info.Sys().(*syscall.Stat_t).Uid }
