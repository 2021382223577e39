// ID: a snowid ID as a type of its own, for the structs an application
// marshals. It is an int64 underneath (snowid.ID(n) and int64(id) convert
// for free; database/sql stores and scans it as the integer), and its text
// and JSON forms are the decimal string, "1234567890123456789": JavaScript,
// whose numbers round above 2^53, reads an ID only as a string.
//
// What it reads back is held to the rule of a node's answers
// (docs/clients.md, "What a client accepts"): plain ASCII decimal digits,
// no sign, space or leading zero (but "0" itself), below 2^63; a JSON
// number is refused, JSON null leaves the ID as it is.
//
// Thread-safety: a plain value.
package snowid

import (
	"bytes"
	"errors"
	"fmt"
	"strconv"
)

// ID is a 64-bit snowid ID (or segment number): an int64 whose text and
// JSON forms are its decimal string.
type ID int64

// ParseID reads an ID's decimal string; ErrInvalidArgument for anything but
// 1 to 19 plain ASCII digits without a leading zero (but "0") below 2^63.
func ParseID(text string) (ID, error) {
	value, err := parseDecimal([]byte(text))
	if err != nil {
		return 0, newError(ErrInvalidArgument, err.Error())
	}
	return ID(value), nil
}

// String returns the decimal form, e.g. "1234567890123456789".
func (id ID) String() string { return strconv.FormatInt(int64(id), 10) }

// MarshalText returns the decimal form; a negative ID, which no node issues,
// is an error.
func (id ID) MarshalText() ([]byte, error) {
	if id < 0 {
		return nil, newError(ErrInvalidArgument, fmt.Sprintf("ID %d is negative", int64(id)))
	}
	return strconv.AppendInt(nil, int64(id), 10), nil
}

// UnmarshalText reads the decimal form as ParseID does.
func (id *ID) UnmarshalText(text []byte) error {
	value, err := parseDecimal(text)
	if err != nil {
		return newError(ErrInvalidArgument, err.Error())
	}
	*id = ID(value)
	return nil
}

// MarshalJSON returns the decimal form as a JSON string.
func (id ID) MarshalJSON() ([]byte, error) {
	text, err := id.MarshalText()
	if err != nil {
		return nil, err
	}
	return append(append([]byte{'"'}, text...), '"'), nil
}

// UnmarshalJSON reads a JSON string of the decimal form; a JSON number, an
// escape in the string or anything else is an ErrInvalidArgument error, and
// null leaves the ID unchanged (encoding/json's convention).
func (id *ID) UnmarshalJSON(data []byte) error {
	if bytes.Equal(data, []byte("null")) {
		return nil
	}
	if len(data) < 2 || data[0] != '"' || data[len(data)-1] != '"' {
		return newError(ErrInvalidArgument,
			fmt.Sprintf("ID %.40s is not a JSON string of decimal digits", data))
	}
	return id.UnmarshalText(data[1 : len(data)-1])
}

// parseDecimal: 1 to 19 ASCII digits, no leading zero but "0" itself, below
// 2^63. The one rule for IDs in text: a node's JSON batches (batch.go) and ID.
func parseDecimal(digits []byte) (int64, error) {
	if len(digits) == 0 || len(digits) > 19 || (digits[0] == '0' && len(digits) > 1) {
		return 0, fmt.Errorf("ID %q is not plain decimal digits", truncate(digits))
	}
	var value uint64
	for _, c := range digits {
		if c < '0' || c > '9' {
			return 0, fmt.Errorf("ID %q is not plain decimal digits", truncate(digits))
		}
		value = value*10 + uint64(c-'0') // 19 digits fit a uint64
	}
	if value >= 1<<63 {
		return 0, errors.New("ID " + string(digits) + " is not below 2^63")
	}
	return int64(value), nil
}

func truncate(text []byte) []byte {
	if len(text) > 40 {
		return text[:40]
	}
	return text
}
