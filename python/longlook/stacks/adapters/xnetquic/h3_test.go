package main

import (
	"bufio"
	"bytes"
	"testing"

	"github.com/quic-go/qpack"
)

func TestVarintsRoundTripAtEachLength(t *testing.T) {
	for _, c := range []struct {
		v    uint64
		size int
	}{{0, 1}, {63, 1}, {64, 2}, {16383, 2}, {16384, 4}, {1<<30 - 1, 4}, {1 << 30, 8}, {1<<62 - 1, 8}} {
		b := appendVarint(nil, c.v)
		if len(b) != c.size {
			t.Fatalf("%d: %d bytes, want %d", c.v, len(b), c.size)
		}
		got, err := readVarint(bufio.NewReader(bytes.NewReader(b)))
		if err != nil || got != c.v {
			t.Fatalf("%d: read %d, %v", c.v, got, err)
		}
	}
	// RFC 9000 §A.1's examples
	for hex, want := range map[string]uint64{"\xc2\x19\x7c\x5e\xff\x14\xe8\x8c": 151288809941952652, "\x9d\x7f\x3e\x7d": 494878333, "\x7b\xbd": 15293, "\x25": 37} {
		got, err := readVarint(bufio.NewReader(bytes.NewReader([]byte(hex))))
		if err != nil || got != want {
			t.Fatalf("% x: %d, want %d", hex, got, want)
		}
	}
	if _, err := readVarint(bufio.NewReader(bytes.NewReader([]byte{0x40}))); err == nil {
		t.Fatal("a cut varint read without error")
	}
}

func TestAHeadersFrameDecodesToItsFields(t *testing.T) {
	frame, err := headersFrame(
		qpack.HeaderField{Name: ":status", Value: "200"},
		qpack.HeaderField{Name: "content-length", Value: "1000"},
		qpack.HeaderField{Name: "x-longlook-run", Value: "r1"},
	)
	if err != nil {
		t.Fatal(err)
	}
	if frame[0] != frameHeaders || int(frame[1]) != len(frame)-2 {
		t.Fatalf("frame header % x", frame[:2])
	}
	fields, err := decodeFields(frame[2:])
	if err != nil {
		t.Fatal(err)
	}
	if fields[":status"] != "200" || fields["content-length"] != "1000" || fields["x-longlook-run"] != "r1" {
		t.Fatalf("%v", fields)
	}
}

func TestAPathOutsideTheRootIsNotServed(t *testing.T) {
	root := t.TempDir()
	for _, p := range []string{"/../etc/passwd", "/a//b", "/missing"} {
		if status, _ := readFile(root, p); status != 404 {
			t.Fatalf("%s: %d", p, status)
		}
	}
}
