// SPDX-License-Identifier: Apache-2.0

package queuestorageextension

import (
	"bufio"
	"bytes"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"go.opentelemetry.io/collector/extension/xextension/storage"
)

// crashWriterEnv makes the test binary a writer that kill -9 interrupts: it
// appends queue items (metadata and item in one batch), deletes them in order
// some items later, and prints "ack N" after each batch returns, as a receiver
// acknowledges once the queue has the data.
const crashWriterEnv = "QUEUE_STORAGE_CRASH_WRITER"

// runCrashWriterIfAsked runs first in the generated TestMain (metadata.yaml,
// tests::goleak::setup): the child process is the writer and runs no test.
func runCrashWriterIfAsked() {
	runMigrationChildIfAsked()
	if dir := os.Getenv(crashWriterEnv); dir != "" {
		crashWriter(dir)
		os.Exit(0)
	}
}

func crashItem(i int) []byte {
	// Sizes vary so records straddle segment boundaries at many offsets.
	return bytes.Repeat([]byte(strconv.Itoa(i)), 200+i%3000)
}

func crashWriter(dir string) {
	o, _ := testOptions(256 << 10)
	s, err := openStore(dir, o)
	if err != nil {
		fmt.Println("open:", err)
		os.Exit(2)
	}
	meta, _ := s.Get(ctx, "qmv0")
	next := 0
	if len(meta) > 0 {
		next, _ = strconv.Atoi(string(meta))
	}
	w := bufio.NewWriter(os.Stdout)
	for i := next; ; i++ {
		if err := s.Batch(ctx, storage.SetOperation("qmv0", []byte(strconv.Itoa(i+1))), storage.SetOperation(strconv.Itoa(i), crashItem(i))); err != nil {
			fmt.Println("batch:", err)
			os.Exit(2)
		}
		fmt.Fprintf(w, "ack %d\n", i)
		w.Flush()
		if i >= 50 {
			if err := s.Batch(ctx, storage.SetOperation("qmv0", []byte(strconv.Itoa(i+1))), storage.DeleteOperation(strconv.Itoa(i-50))); err != nil {
				fmt.Println("delete:", err)
				os.Exit(2)
			}
		}
	}
}

// kill -9 at random points while writing, several times on the same
// directory: every acknowledged item that was not deleted is there, intact.
func TestKillNineWhileWriting(t *testing.T) {
	dir := t.TempDir()
	rng := rand.New(rand.NewPCG(uint64(time.Now().UnixNano()), 1))
	lastAcked := -1
	for round := range 6 {
		cmd := exec.Command(os.Args[0], "-test.run=^$")
		cmd.Env = append(os.Environ(), crashWriterEnv+"="+dir)
		out, err := cmd.StdoutPipe()
		if err != nil {
			t.Fatal(err)
		}
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		acks := make(chan int, 1<<16)
		go func() {
			defer close(acks)
			sc := bufio.NewScanner(out)
			for sc.Scan() {
				if n, ok := strings.CutPrefix(sc.Text(), "ack "); ok {
					i, _ := strconv.Atoi(n)
					acks <- i
				} else {
					t.Errorf("writer: %s", sc.Text())
				}
			}
		}()
		// The clock starts at the first acknowledgement, not at exec: under
		// -race on a busy machine, starting the binary and recovering the
		// segments of earlier rounds can take longer than the kill delay.
		first := lastAcked
		select {
		case i, ok := <-acks:
			if !ok {
				_ = cmd.Wait()
				t.Fatalf("round %d: the writer exited before acknowledging anything", round)
			}
			lastAcked = i
		case <-time.After(2 * time.Minute):
			_ = cmd.Process.Signal(syscall.SIGKILL)
			_ = cmd.Wait()
			t.Fatalf("round %d: the writer acknowledged nothing in 2m", round)
		}
		// Let it write a while (past at least one segment), then kill it.
		time.Sleep(time.Duration(300+rng.IntN(700)) * time.Millisecond)
		_ = cmd.Process.Signal(syscall.SIGKILL)
		_ = cmd.Wait()
		for i := range acks {
			lastAcked = i
		}
		if lastAcked <= first {
			t.Fatalf("round %d: the writer acknowledged nothing", round)
		}

		o, logs := testOptions(256 << 10)
		s := openTest(t, dir, o)
		meta, _ := s.Get(ctx, "qmv0")
		next, _ := strconv.Atoi(string(meta))
		if next < lastAcked+1 {
			t.Fatalf("round %d: metadata says %d items written, %d were acknowledged", round, next, lastAcked+1)
		}
		for i := max(0, next-50); i < next; i++ {
			v, _ := s.Get(ctx, strconv.Itoa(i))
			if !bytes.Equal(v, crashItem(i)) {
				t.Fatalf("round %d: item %d (acknowledged up to %d) lost or damaged: %d bytes", round, i, lastAcked, len(v))
			}
		}
		_, disk, segs := s.usage()
		t.Logf("round %d: killed after %d acknowledged items; recovered, %d segments (%d KiB), torn tails dropped: %d", round, lastAcked+1, segs, disk>>10, logs.FilterMessageSnippet("torn record").Len())
		s.Close(ctx)
	}
}
