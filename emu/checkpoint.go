package emu

import (
	"bufio"
	"bytes"
	"crypto/sha256"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"reflect"
	"strings"

	"shardlab/mesh"
)

// Checkpoint is a run's complete state after a step: every device's
// parameter shards and Adam moments and the simulated clocks. Resuming
// from it continues bit for bit as if the run had not stopped.
type Checkpoint struct {
	Header  CheckpointHeader
	Step    int
	Devices []DeviceState
}

// CheckpointHeader identifies the run a checkpoint belongs to: every
// setting that changes the run's losses, parameters or simulated times.
// Resuming under any other value would silently give a run that matches
// neither, so restore refuses it.
type CheckpointHeader struct {
	Model        Config `json:"model"`
	Layout       string `json:"layout"`
	Topology     string `json:"topology"`
	GlobalBatch  int    `json:"global_batch"`
	MicroBatches int    `json:"micro_batches"`
	// Schedule is recorded with a pipeline only: without one it changes
	// nothing.
	Schedule string `json:"schedule"`
	// Chunks is recorded with interleaved and circular schedules only
	// (it changes which layers each device holds).
	Chunks          int     `json:"chunks,omitempty"`
	Seed            uint64  `json:"seed"`
	LR              float64 `json:"lr"`
	BF16Compute     bool    `json:"bf16_compute"`
	Efficiency      float64 `json:"efficiency"`
	FreeComm        bool    `json:"free_comm"`
	BlocksOnlyClock bool    `json:"blocks_only_clock"`
	// Data is the data source's Identity (its content, not its path).
	Data string `json:"data"`
	Step int    `json:"step"`
	// Process and Processes place the checkpoint when several processes
	// run a mesh: each writes its own devices.
	Process   int `json:"process"`
	Processes int `json:"processes"`
}

// MismatchError is a checkpoint of another run: the header fields (by
// their JSON names, "model.d_model") whose values differ.
type MismatchError struct {
	Fields []FieldMismatch
}

// FieldMismatch is one differing header field.
type FieldMismatch struct {
	Field      string
	Checkpoint string // the checkpoint's value
	Run        string // this run's
}

func (e *MismatchError) Error() string {
	var parts []string
	for _, f := range e.Fields {
		parts = append(parts, fmt.Sprintf("%s %s, this run %s", f.Field, f.Checkpoint, f.Run))
	}
	return "emu: the checkpoint is of another run: " + strings.Join(parts, "; ")
}

// Unwrap makes a mismatch an ErrCheckpoint.
func (e *MismatchError) Unwrap() error { return ErrCheckpoint }

// diffHeaders lists the fields of two headers that differ, by JSON name,
// descending into nested structs (the model).
func diffHeaders(ck, run CheckpointHeader) []FieldMismatch {
	var out []FieldMismatch
	var walk func(prefix string, a, b reflect.Value)
	walk = func(prefix string, a, b reflect.Value) {
		for i := range a.NumField() {
			name, _, _ := strings.Cut(a.Type().Field(i).Tag.Get("json"), ",")
			fa, fb := a.Field(i), b.Field(i)
			if fa.Kind() == reflect.Struct {
				walk(prefix+name+".", fa, fb)
				continue
			}
			if !fa.Equal(fb) {
				format := "%v"
				if fa.Kind() == reflect.String {
					format = "%q"
				}
				out = append(out, FieldMismatch{Field: prefix + name, Checkpoint: fmt.Sprintf(format, fa.Interface()), Run: fmt.Sprintf(format, fb.Interface())})
			}
		}
	}
	walk("", reflect.ValueOf(ck), reflect.ValueOf(run))
	return out
}

// DeviceState is one device's optimizer state.
type DeviceState struct {
	ID    int
	AdamT int
	Clock float64
	Flat  [][]float32
	M, V  [][]float32
}

func header(tc *TrainConfig, step int) CheckpointHeader {
	h := CheckpointHeader{Model: tc.Model, Layout: tc.Mesh.String(), Topology: tc.Mesh.Multislice.String(), GlobalBatch: tc.GlobalBatch,
		MicroBatches: tc.MicroBatches, Seed: tc.Seed, LR: tc.LR, BF16Compute: tc.BF16Compute, Efficiency: tc.Efficiency,
		FreeComm: tc.FreeComm, BlocksOnlyClock: tc.BlocksOnlyClock, Data: tc.dataID, Step: step, Processes: 1}
	if tc.Mesh.Size(mesh.Pipeline) > 1 {
		h.Schedule = string(tc.Schedule)
	}
	if tc.Schedule.Chunked() {
		h.Chunks = tc.Chunks
	}
	if tc.Remote != nil {
		h.Process, h.Processes = tc.Remote.Rank(), tc.Remote.Size()
	}
	return h
}

func cloneAll(x [][]float32) [][]float32 {
	out := make([][]float32, len(x))
	for i := range x {
		out[i] = append([]float32(nil), x[i]...)
	}
	return out
}

func snapshot(tc *TrainConfig, devs []*device, step int) *Checkpoint {
	c := &Checkpoint{Header: header(tc, step), Step: step}
	for _, d := range devs {
		c.Devices = append(c.Devices, DeviceState{ID: d.id, AdamT: d.adamT, Clock: d.ep.clock(), Flat: cloneAll(d.flat), M: cloneAll(d.m), V: cloneAll(d.v)})
	}
	return c
}

// ErrCheckpoint is wrapped by every checkpoint that cannot be used.
var ErrCheckpoint = errors.New("unusable checkpoint")

func (c *Checkpoint) restore(tc *TrainConfig, devs []*device) error {
	if diff := diffHeaders(c.Header, header(tc, c.Step)); len(diff) > 0 {
		return &MismatchError{Fields: diff}
	}
	if len(c.Devices) != len(devs) {
		return fmt.Errorf("emu: checkpoint has %d devices, the layout %d: %w", len(c.Devices), len(devs), ErrCheckpoint)
	}
	for i, d := range devs {
		s := c.Devices[i]
		if s.ID != d.id {
			return fmt.Errorf("emu: checkpoint entry %d is device %d, want %d: %w", i, s.ID, d.id, ErrCheckpoint)
		}
		if s.AdamT != c.Step {
			return fmt.Errorf("emu: checkpoint device %d has taken %d Adam steps, want the checkpoint's step %d: %w", s.ID, s.AdamT, c.Step, ErrCheckpoint)
		}
		for _, pair := range []struct{ dst, src [][]float32 }{{d.flat, s.Flat}, {d.m, s.M}, {d.v, s.V}} {
			if len(pair.src) != len(pair.dst) {
				return fmt.Errorf("emu: checkpoint device %d has %d tensors, want %d: %w", i, len(pair.src), len(pair.dst), ErrCheckpoint)
			}
			for gi := range pair.dst {
				if len(pair.src[gi]) != len(pair.dst[gi]) {
					return fmt.Errorf("emu: checkpoint device %d tensor %d has %d values, want %d: %w", i, gi, len(pair.src[gi]), len(pair.dst[gi]), ErrCheckpoint)
				}
				copy(pair.dst[gi], pair.src[gi])
			}
		}
		d.adamT = s.AdamT
		d.ep.f.clocks[d.id] = s.Clock
	}
	return nil
}

// ckptMagic starts every checkpoint; the number is the format version
// (2: the header records every setting that changes the result).
const (
	ckptMagic       = "SHARDLAB-CKPT-2\n"
	ckptMagicPrefix = "SHARDLAB-CKPT-"
)

// WriteTo encodes the checkpoint: magic, a JSON header, every device's
// tensors as little-endian float32, and a SHA-256 of all that. It streams
// (one tensor's bytes at a time), so writing costs no copy of the state.
func (c *Checkpoint) WriteTo(w io.Writer) (int64, error) {
	h, err := json.Marshal(c.Header)
	if err != nil {
		return 0, err
	}
	sum := sha256.New()
	cw := &countingWriter{w: io.MultiWriter(w, sum)}
	bw := bufio.NewWriterSize(cw, 1<<16)
	var word [8]byte
	putU64 := func(v uint64) {
		binary.LittleEndian.PutUint64(word[:], v)
		bw.Write(word[:])
	}
	var buf []byte
	bw.WriteString(ckptMagic)
	putU64(uint64(len(h)))
	bw.Write(h)
	putU64(uint64(len(c.Devices)))
	for _, d := range c.Devices {
		putU64(uint64(d.ID))
		putU64(uint64(d.AdamT))
		putU64(math.Float64bits(d.Clock))
		for _, set := range [][][]float32{d.Flat, d.M, d.V} {
			putU64(uint64(len(set)))
			for _, x := range set {
				putU64(uint64(len(x)))
				buf = buf[:0]
				for _, f := range x {
					buf = binary.LittleEndian.AppendUint32(buf, math.Float32bits(f))
				}
				bw.Write(buf)
			}
		}
	}
	if err := bw.Flush(); err != nil { // bufio keeps the first error
		return cw.n, err
	}
	// the checksum goes to w alone
	n, err := w.Write(sum.Sum(nil))
	return cw.n + int64(n), err
}

type countingWriter struct {
	w io.Writer
	n int64
}

func (c *countingWriter) Write(p []byte) (int, error) {
	n, err := c.w.Write(p)
	c.n += int64(n)
	return n, err
}

// maxCheckpointBytes bounds what ReadCheckpoint reads (16 GiB).
const maxCheckpointBytes = 1 << 34

// ReadCheckpoint decodes and verifies a checkpoint; a truncated or
// corrupted one is refused.
func ReadCheckpoint(r io.Reader) (*Checkpoint, error) {
	data, err := io.ReadAll(io.LimitReader(r, maxCheckpointBytes+1))
	if err != nil {
		return nil, err
	}
	if len(data) > maxCheckpointBytes {
		return nil, fmt.Errorf("emu: checkpoint is over %d bytes, the most this reads: %w", maxCheckpointBytes, ErrCheckpoint)
	}
	if len(data) >= len(ckptMagic) && string(data[:len(ckptMagicPrefix)]) == ckptMagicPrefix && string(data[:len(ckptMagic)]) != ckptMagic {
		return nil, fmt.Errorf("emu: checkpoint format %q, this shardlab reads %q only: %w", strings.TrimSpace(string(data[len(ckptMagicPrefix):len(ckptMagic)])),
			strings.TrimSpace(ckptMagic[len(ckptMagicPrefix):]), ErrCheckpoint)
	}
	if len(data) < len(ckptMagic)+sha256.Size || string(data[:len(ckptMagic)]) != ckptMagic {
		return nil, fmt.Errorf("emu: not a shardlab checkpoint (or truncated before its header): %w", ErrCheckpoint)
	}
	body, sum := data[:len(data)-sha256.Size], data[len(data)-sha256.Size:]
	if got := sha256.Sum256(body); !bytes.Equal(got[:], sum) {
		return nil, fmt.Errorf("emu: checkpoint checksum mismatch (corrupted or truncated): %w", ErrCheckpoint)
	}
	return decodeCheckpoint(body[len(ckptMagic):])
}

// decodeCheckpoint decodes what follows the magic, checksum already
// verified. Every count and length is bounded by the bytes left before
// anything is allocated, so a crafted file with a valid checksum is
// refused, not a panic or a huge allocation.
func decodeCheckpoint(body []byte) (*Checkpoint, error) {
	rd := ckptReader{bytes.NewReader(body)}
	c := &Checkpoint{}
	if err := rd.header(&c.Header); err != nil {
		return nil, err
	}
	c.Step = c.Header.Step
	if c.Step < 0 {
		return nil, fmt.Errorf("emu: checkpoint step %d, want at least 0: %w", c.Step, ErrCheckpoint)
	}
	// a device is at least six words (id, Adam step, clock, three counts)
	nd, err := rd.count("device count", 6*8)
	if err != nil {
		return nil, err
	}
	c.Devices = make([]DeviceState, 0, nd)
	for range nd {
		s, err := rd.device()
		if err != nil {
			return nil, err
		}
		c.Devices = append(c.Devices, s)
	}
	if rd.Len() != 0 {
		return nil, fmt.Errorf("emu: checkpoint has %d trailing bytes: %w", rd.Len(), ErrCheckpoint)
	}
	return c, nil
}

// ckptReader reads a checkpoint's body, every count bounded by the bytes
// left.
type ckptReader struct{ *bytes.Reader }

var errCkptShort = fmt.Errorf("emu: checkpoint ends early: %w", ErrCheckpoint)

func (rd ckptReader) u64() (uint64, error) {
	var v uint64
	if binary.Read(rd, binary.LittleEndian, &v) != nil {
		return 0, errCkptShort
	}
	return v, nil
}

// count reads a count of things at least least bytes each, refusing one
// that the bytes left cannot hold.
func (rd ckptReader) count(what string, least uint64) (uint64, error) {
	n, err := rd.u64()
	if err != nil {
		return 0, err
	}
	if left := uint64(rd.Len()); n > left/least {
		return 0, fmt.Errorf("emu: checkpoint %s is %d, more than the %d bytes left allow: %w", what, n, left, ErrCheckpoint)
	}
	return n, nil
}

// header reads the JSON header and its length.
func (rd ckptReader) header(h *CheckpointHeader) error {
	n, err := rd.count("header length", 1)
	if err != nil {
		return err
	}
	b := make([]byte, n)
	if _, err := io.ReadFull(rd, b); err != nil {
		return errCkptShort
	}
	if err := json.Unmarshal(b, h); err != nil {
		return fmt.Errorf("emu: checkpoint header: %v: %w", err, ErrCheckpoint)
	}
	return nil
}

// device reads one device's id, Adam step, clock and tensors.
func (rd ckptReader) device() (DeviceState, error) {
	var s DeviceState
	var w [3]uint64
	for i := range w {
		var err error
		if w[i], err = rd.u64(); err != nil {
			return s, err
		}
	}
	id, t := w[0], w[1]
	if id > 1<<20 || t > 1<<40 {
		return s, fmt.Errorf("emu: checkpoint device %d at Adam step %d, want at most %d and %d: %w", id, t, 1<<20, 1<<40, ErrCheckpoint)
	}
	s.ID, s.AdamT, s.Clock = int(id), int(t), math.Float64frombits(w[2])
	if !(s.Clock >= 0) || math.IsInf(s.Clock, 0) {
		return s, fmt.Errorf("emu: checkpoint device %d has clock %v, want a finite time: %w", id, s.Clock, ErrCheckpoint)
	}
	for _, set := range []*[][]float32{&s.Flat, &s.M, &s.V} {
		var err error
		if *set, err = rd.tensors(); err != nil {
			return s, err
		}
	}
	return s, nil
}

// tensors reads a count of tensors (each at least its length word), then
// each one's length and little-endian float32 values.
func (rd ckptReader) tensors() ([][]float32, error) {
	k, err := rd.count("tensor count", 8)
	if err != nil {
		return nil, err
	}
	out := make([][]float32, 0, k)
	for range k {
		l, err := rd.count("tensor length", 4)
		if err != nil {
			return nil, err
		}
		x := make([]float32, l)
		if err := binary.Read(rd, binary.LittleEndian, x); err != nil {
			return nil, errCkptShort
		}
		out = append(out, x)
	}
	return out, nil
}
