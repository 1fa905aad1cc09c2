package postgres

import (
	"database/sql/driver"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"fmt"
	"math"
	"math/big"
	"net"
	"net/netip"
	"reflect"
	"time"

	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgtype"

	"github.com/noetl/gcpengine/shared/jsonx"
)

// decodeValue turns one raw column value (text or binary format) into a
// JSON-friendly Go value (see Tool.Exec for the mapping).
func decodeValue(m *pgtype.Map, fd pgconn.FieldDescription, raw []byte) (any, error) {
	if raw == nil {
		return nil, nil
	}
	switch fd.DataTypeOID {
	case pgtype.JSONOID, pgtype.JSONBOID:
		b := raw
		if fd.DataTypeOID == pgtype.JSONBOID && fd.Format == pgtype.BinaryFormatCode {
			if len(b) == 0 || b[0] != 1 {
				return nil, errors.New("unsupported jsonb binary version")
			}
			b = b[1:]
		}
		return jsonx.Decode(b)
	}
	dt, found := m.TypeForOID(fd.DataTypeOID)
	if !found {
		if fd.Format == pgtype.TextFormatCode {
			return string(raw), nil // enums, domains over unknown types, ...
		}
		return base64.StdEncoding.EncodeToString(raw), nil
	}
	v, err := dt.Codec.DecodeValue(m, fd.DataTypeOID, fd.Format, raw)
	if err != nil {
		return nil, err
	}
	switch x := v.(type) {
	case time.Time:
		if fd.DataTypeOID == pgtype.DateOID {
			return x.Format(time.DateOnly), nil
		}
	case rune:
		if fd.DataTypeOID == pgtype.QCharOID {
			return string(x), nil
		}
	}
	return friendly(v), nil
}

// friendly converts a value produced by a pgtype codec into nil, bool,
// string, int64, float64, []any or map[string]any.
func friendly(v any) any {
	switch x := v.(type) {
	case nil, bool, string:
		return x
	case int, int8, int16, int32, int64, uint, uint8, uint16, uint32, uint64, float32, float64:
		n, _ := jsonx.Number(x) // the engine's number rule
		return n
	case time.Time:
		return x.Format(time.RFC3339Nano)
	case []byte:
		return base64.StdEncoding.EncodeToString(x)
	case [16]byte: // uuid
		var buf [36]byte
		hex.Encode(buf[0:8], x[0:4])
		buf[8] = '-'
		hex.Encode(buf[9:13], x[4:6])
		buf[13] = '-'
		hex.Encode(buf[14:18], x[6:8])
		buf[18] = '-'
		hex.Encode(buf[19:23], x[8:10])
		buf[23] = '-'
		hex.Encode(buf[24:], x[10:16])
		return string(buf[:])
	case pgtype.Numeric:
		return numeric(x)
	case pgtype.InfinityModifier:
		return x.String()
	case netip.Prefix:
		if x.Bits() == x.Addr().BitLen() {
			return x.Addr().String()
		}
		return x.String()
	case netip.Addr:
		return x.String()
	case net.HardwareAddr:
		return x.String()
	case []any:
		out := make([]any, len(x))
		for i, e := range x {
			out[i] = friendly(e)
		}
		return out
	case map[string]any:
		out := make(map[string]any, len(x))
		for k, e := range x {
			out[k] = friendly(e)
		}
		return out
	case map[string]*string: // hstore
		out := make(map[string]any, len(x))
		for k, e := range x {
			if e == nil {
				out[k] = nil
			} else {
				out[k] = *e
			}
		}
		return out
	case driver.Valuer:
		dv, err := x.Value()
		if err != nil {
			return fmt.Sprint(x)
		}
		if _, again := dv.(driver.Valuer); again {
			return fmt.Sprint(dv)
		}
		return friendly(dv)
	case fmt.Stringer:
		return x.String()
	}
	rv := reflect.ValueOf(v)
	switch rv.Kind() {
	case reflect.Slice, reflect.Array:
		out := make([]any, rv.Len())
		for i := range out {
			out[i] = friendly(rv.Index(i).Interface())
		}
		return out
	case reflect.Pointer:
		if rv.IsNil() {
			return nil
		}
		return friendly(rv.Elem().Interface())
	}
	return fmt.Sprint(v)
}

// numeric converts a NUMERIC: NaN/±Infinity as strings, integral values
// written without a fractional part as int64 (when they fit), others
// float64.
func numeric(n pgtype.Numeric) any {
	switch {
	case !n.Valid:
		return nil
	case n.NaN:
		return "NaN"
	case n.InfinityModifier == pgtype.Infinity:
		return "Infinity"
	case n.InfinityModifier == pgtype.NegativeInfinity:
		return "-Infinity"
	}
	if n.Exp >= 0 {
		if i, err := n.Int64Value(); err == nil && i.Valid {
			return i.Int64
		}
	}
	if f, err := n.Float64Value(); err == nil && f.Valid {
		return jsonx.Float(f.Float64)
	}
	f, _ := new(big.Float).SetInt(n.Int).Float64()
	return f * math.Pow10(int(n.Exp))
}
