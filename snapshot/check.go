package snapshot

import (
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"time"
)

// CheckResult is what Check found in a file.
type CheckResult struct {
	// Kind is "snapshot" or "log".
	Kind   string
	Header Header
	// Keys and Marks count a snapshot's records; Records a log's.
	Keys, Marks, Records int64
	// History counts a snapshot's channel history messages.
	History int64
	// Functions counts a snapshot's function libraries.
	Functions int64
	// Databases counts the keys of each database of a snapshot.
	Databases map[int]int64
	// OpenUnits counts a log's transactions without an end: a crash cut
	// them, and a start drops them.
	OpenUnits int
	// Truncated is set for a log whose last record was cut short.
	Truncated bool
	// ValidEnd is where a log's good part ends.
	ValidEnd int64
	// Size is the file's size.
	Size int64
	// Fixed is set once Check cut a damaged log back to its good part.
	Fixed bool
}

// Check reads the snapshot or log at path in full and verifies it,
// writing a report to out, damage included. With fix, a log whose end is
// cut short or damaged is truncated to its last good record, and a missing
// log (path named appendonly.<g>.aof) is created empty, so that the server
// starts without the writes it held; a damaged snapshot or log header
// cannot be repaired. The error is the damage found (a *CorruptError), nil
// when the file is sound or was fixed; any other error (a file that cannot
// be read) is returned without a report.
func Check(path string, fix bool, out io.Writer) (CheckResult, error) {
	res, err := check(path, fix, out)
	var ce *CorruptError
	if errors.As(err, &ce) && !ce.reported {
		// Damage found before any record: the magic or the header.
		fmt.Fprintln(out, err)
		fmt.Fprintf(out, "%s: the header is damaged and cannot be repaired: restore the file from a backup, or move it out of the data directory to start without it\n", path)
	}
	return res, err
}

func check(path string, fix bool, out io.Writer) (CheckResult, error) {
	var res CheckResult
	f, err := os.Open(path)
	if errors.Is(err, os.ErrNotExist) {
		if g, ok := ParseLogName(filepath.Base(path)); ok {
			return createMissingLog(path, g, fix, out)
		}
	}
	if err != nil {
		return res, err
	}
	st, err := f.Stat()
	if err != nil {
		f.Close()
		return res, err
	}
	res.Size = st.Size()
	magic := make([]byte, max(len(SnapshotMagic), len(LogMagic)))
	n, _ := io.ReadFull(f, magic)
	magic = magic[:n]
	f.Close()
	switch {
	case len(magic) >= len(SnapshotMagic) && string(magic[:len(SnapshotMagic)]) == SnapshotMagic:
		return checkSnapshot(path, fix, out, res)
	case len(magic) >= len(LogMagic) && string(magic[:len(LogMagic)]) == LogMagic:
		return checkLog(path, fix, out, res)
	case res.Size == 0:
		return res, &CorruptError{Path: path, Offset: 0, Msg: "empty file"}
	}
	return res, &CorruptError{Path: path, Offset: 0, Msg: "neither a recached snapshot nor a recached log (bad magic)"}
}

func checkSnapshot(path string, fix bool, out io.Writer, res CheckResult) (CheckResult, error) {
	res.Kind = "snapshot"
	res.Databases = map[int]int64{}
	r, f, err := Open(path)
	if err != nil {
		return res, err
	}
	defer f.Close()
	res.Header = r.Header()
	fmt.Fprintf(out, "%s: snapshot, format version %d, generation %d, written %s\n", path, res.Header.Version, res.Header.Generation, time.UnixMilli(res.Header.Created).UTC().Format(time.RFC3339))
	for {
		rec, err := r.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			fmt.Fprintln(out, err)
			markReported(err)
			if fix {
				fmt.Fprintf(out, "%s: a damaged snapshot cannot be repaired; restore it from a backup or move it away to start from the logs alone\n", path)
			}
			return res, err
		}
		if rec.IsMark {
			res.Marks++
			continue
		}
		if rec.IsHistory {
			res.History++
			continue
		}
		if rec.IsFunction {
			res.Functions++
			continue
		}
		res.Keys++
		res.Databases[rec.DB]++
	}
	hist := ""
	if res.History > 0 {
		hist = fmt.Sprintf(", %d channel history messages", res.History)
	}
	if res.Functions > 0 {
		hist += fmt.Sprintf(", %d function libraries", res.Functions)
	}
	fmt.Fprintf(out, "%s: ok: %d keys in %d databases, %d DEDUP marks%s, checksum verified\n", path, res.Keys, len(res.Databases), res.Marks, hist)
	return res, nil
}

func checkLog(path string, fix bool, out io.Writer, res CheckResult) (CheckResult, error) {
	res.Kind = "log"
	r, f, err := OpenLog(path)
	if err != nil {
		return res, err
	}
	res.Header = r.Header()
	fmt.Fprintf(out, "%s: append-only log, format version %d, generation %d, started %s\n", path, res.Header.Version, res.Header.Generation, time.UnixMilli(res.Header.Created).UTC().Format(time.RFC3339))
	var damage error
	open := map[uint64]bool{}
	for {
		rec, err := r.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			damage = err
			break
		}
		if rec.IsUnitEnd {
			delete(open, rec.Unit)
		} else if rec.Unit != 0 {
			open[rec.Unit] = true
		}
	}
	res.OpenUnits = len(open)
	f.Close()
	res.Records = r.Records
	res.Truncated = r.Truncated
	res.ValidEnd = r.ValidEnd()
	switch {
	case damage != nil:
		fmt.Fprintln(out, damage)
		markReported(damage)
		fmt.Fprintf(out, "%s: %d good records end at byte offset %d; %d bytes follow\n", path, res.Records, res.ValidEnd, res.Size-res.ValidEnd)
	case res.Truncated:
		damage = &CorruptError{Path: path, Offset: res.ValidEnd, Msg: "the last record is cut short", reported: true}
		fmt.Fprintf(out, "%s: %d good records; the last record, at byte offset %d, is cut short (%d bytes)\n", path, res.Records, res.ValidEnd, res.Size-res.ValidEnd)
	default:
		fmt.Fprintf(out, "%s: ok: %d records\n", path, res.Records)
		if res.OpenUnits > 0 {
			fmt.Fprintf(out, "%s: %d transaction(s) without an end (cut by a crash before their reply): a start drops them\n", path, res.OpenUnits)
		}
		return res, nil
	}
	if !fix {
		fmt.Fprintf(out, "%s: run with --fix to truncate it to byte offset %d\n", path, res.ValidEnd)
		return res, damage
	}
	if err := truncateFile(path, res.ValidEnd); err != nil {
		return res, err
	}
	res.Fixed = true
	fmt.Fprintf(out, "%s: fixed: truncated to %d bytes (%d records kept)\n", path, res.ValidEnd, res.Records)
	return res, nil
}

// markReported notes that a *CorruptError was written to the report.
func markReported(err error) {
	var ce *CorruptError
	if errors.As(err, &ce) {
		ce.reported = true
	}
}

// createMissingLog handles a log of generation gen that does not exist:
// the report says so, and with fix the log is created holding only its
// header, so that a start accepts a snapshot of that generation without
// the writes the log held.
func createMissingLog(path string, gen uint64, fix bool, out io.Writer) (CheckResult, error) {
	res := CheckResult{Kind: "log", Header: Header{Version: Version, Generation: gen}}
	if !fix {
		fmt.Fprintf(out, "%s: missing\n", path)
		fmt.Fprintf(out, "%s: run with --fix to create it empty (the writes it held are lost)\n", path)
		return res, &CorruptError{Path: path, Msg: "the file is missing", reported: true}
	}
	res.Header.Created = time.Now().UnixMilli()
	f, _, err := CreateLog(filepath.Dir(path), res.Header)
	if err != nil {
		return res, err
	}
	if err := f.Close(); err != nil {
		return res, err
	}
	res.Fixed = true
	fmt.Fprintf(out, "%s: fixed: created empty; the writes it held are lost\n", path)
	return res, nil
}

func truncateFile(path string, size int64) error {
	f, err := os.OpenFile(path, os.O_WRONLY, 0)
	if err != nil {
		return err
	}
	err = f.Truncate(size)
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	return err
}

// IsCorrupt reports whether err is a *CorruptError.
func IsCorrupt(err error) bool {
	var ce *CorruptError
	return errors.As(err, &ce)
}
