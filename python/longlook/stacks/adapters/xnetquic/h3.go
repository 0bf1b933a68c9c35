package main

// A minimal HTTP/3 (RFC 9114) over golang.org/x/net/quic, written here because no library
// gives one: x/net keeps its HTTP/3 internal (not importable), and quic-go's http3 runs over
// quic-go's own transport only. It is what a GET of a file needs and no more: each side's
// control stream with its SETTINGS (no dynamic QPACK table is offered, so a peer opens no
// encoder or decoder stream it needs answered), one HEADERS frame each way, DATA frames, and
// unknown frames and streams skipped as RFC 9114 §9 asks. The QPACK field sections are
// github.com/quic-go/qpack's (static table and Huffman), a library apart from quic-go.

import (
	"bytes"
	"errors"
	"fmt"
	"io"

	"github.com/quic-go/qpack"
	"golang.org/x/net/quic"
)

const (
	frameData     = 0x00
	frameHeaders  = 0x01
	frameSettings = 0x04
	streamControl = 0x00 // a unidirectional stream's type
	// a HEADERS frame larger than this is refused (ours carry a few fields)
	maxHeadersFrame = 64 << 10
	// H3_NO_ERROR, for closing the connection when done
	h3NoError = 0x100
)

// appendVarint appends v as a QUIC variable-length integer (RFC 9000 §16).
func appendVarint(b []byte, v uint64) []byte {
	switch {
	case v < 1<<6:
		return append(b, byte(v))
	case v < 1<<14:
		return append(b, 0x40|byte(v>>8), byte(v))
	case v < 1<<30:
		return append(b, 0x80|byte(v>>24), byte(v>>16), byte(v>>8), byte(v))
	default:
		return append(b, 0xc0|byte(v>>56), byte(v>>48), byte(v>>40), byte(v>>32),
			byte(v>>24), byte(v>>16), byte(v>>8), byte(v))
	}
}

// readVarint reads one variable-length integer.
func readVarint(r io.ByteReader) (uint64, error) {
	first, err := r.ReadByte()
	if err != nil {
		return 0, err
	}
	v := uint64(first & 0x3f)
	for n := 1<<(first>>6) - 1; n > 0; n-- {
		b, err := r.ReadByte()
		if err != nil {
			return 0, io.ErrUnexpectedEOF
		}
		v = v<<8 | uint64(b)
	}
	return v, nil
}

// appendFrame appends a frame of type t around payload.
func appendFrame(b []byte, t uint64, payload []byte) []byte {
	b = appendVarint(b, t)
	b = appendVarint(b, uint64(len(payload)))
	return append(b, payload...)
}

// openControl opens this side's control stream and sends its SETTINGS: none of the
// defaults changed (QPACK_MAX_TABLE_CAPACITY 0: no dynamic table).
func openControl(conn *quic.Conn, ctx ctxT) (*quic.Stream, error) {
	s, err := conn.NewSendOnlyStream(ctx)
	if err != nil {
		return nil, err
	}
	b := appendVarint(nil, streamControl)
	b = appendFrame(b, frameSettings, nil)
	if _, err := s.Write(b); err != nil {
		return nil, err
	}
	return s, s.Flush()
}

// drainPeerStreams reads and drops what the peer sends on its unidirectional streams (its
// control stream, and any encoder or decoder stream), so flow control never stalls them;
// a bidirectional stream from the peer (a server's push is not asked for) is handed to
// `bidi`, or refused when it is nil.
func drainPeerStreams(conn *quic.Conn, ctx ctxT, bidi func(*quic.Stream)) {
	for {
		s, err := conn.AcceptStream(ctx)
		if err != nil {
			return
		}
		if s.IsReadOnly() {
			go io.Copy(io.Discard, s)
			continue
		}
		if bidi == nil {
			s.Reset(0x104) // H3_STREAM_CREATION_ERROR
			continue
		}
		go bidi(s)
	}
}

// headersFrame encodes fields as one HEADERS frame.
func headersFrame(fields ...qpack.HeaderField) ([]byte, error) {
	var block bytes.Buffer
	enc := qpack.NewEncoder(&block)
	for _, f := range fields {
		if err := enc.WriteField(f); err != nil {
			return nil, err
		}
	}
	if err := enc.Close(); err != nil {
		return nil, err
	}
	return appendFrame(nil, frameHeaders, block.Bytes()), nil
}

// readHeaders reads frames until a HEADERS frame and decodes it; unknown frame types before
// it are skipped (RFC 9114 §9), a DATA frame first is a protocol error.
func readHeaders(s *quic.Stream) (map[string]string, error) {
	for {
		t, n, err := frameHeader(s)
		if err != nil {
			return nil, err
		}
		switch t {
		case frameHeaders:
			if n > maxHeadersFrame {
				return nil, fmt.Errorf("a HEADERS frame of %d bytes", n)
			}
			block := make([]byte, n)
			if _, err := io.ReadFull(s, block); err != nil {
				return nil, err
			}
			fields, err := decodeFields(block)
			if err != nil {
				return nil, fmt.Errorf("QPACK: %w", err)
			}
			return fields, nil
		case frameData:
			return nil, errors.New("DATA before HEADERS")
		default:
			if _, err := io.CopyN(io.Discard, s, int64(n)); err != nil {
				return nil, err
			}
		}
	}
}

func decodeFields(block []byte) (map[string]string, error) {
	out := map[string]string{}
	next := qpack.NewDecoder().Decode(block)
	for {
		f, err := next()
		if errors.Is(err, io.EOF) {
			return out, nil
		}
		if err != nil {
			return nil, err
		}
		out[f.Name] = f.Value
	}
}

// frameHeader reads a frame's type and payload length.
func frameHeader(s *quic.Stream) (uint64, uint64, error) {
	t, err := readVarint(s)
	if err != nil {
		return 0, 0, err
	}
	n, err := readVarint(s)
	if err != nil {
		return 0, 0, io.ErrUnexpectedEOF
	}
	return t, n, nil
}

// readBody reads the DATA frames that follow the HEADERS up to the stream's end, handing
// each piece of payload to `got` as it arrives; frames of other types are skipped.
func readBody(s *quic.Stream, got func([]byte)) error {
	buf := make([]byte, 64<<10)
	for {
		t, n, err := frameHeader(s)
		if errors.Is(err, io.EOF) {
			return nil
		}
		if err != nil {
			return err
		}
		if t != frameData {
			if _, err := io.CopyN(io.Discard, s, int64(n)); err != nil {
				return err
			}
			continue
		}
		for n > 0 {
			k, err := s.Read(buf[:min(uint64(len(buf)), n)])
			if k > 0 {
				got(buf[:k])
				n -= uint64(k)
			}
			if err != nil {
				if n > 0 {
					return io.ErrUnexpectedEOF
				}
				break
			}
		}
	}
}
