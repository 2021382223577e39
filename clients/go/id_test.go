// ID: its decimal string in text and JSON, and what it refuses to read back.
package snowid_test

import (
	"database/sql/driver"
	"encoding/json"
	"errors"
	"testing"

	"snowid.io/snowid"
)

func TestIDIsItsDecimalStringInTextAndJSON(t *testing.T) {
	type order struct {
		ID    snowid.ID            `json:"id"`
		Items []snowid.ID          `json:"items"`
		ByID  map[snowid.ID]string `json:"by_id"`
	}
	in := order{ID: 1<<63 - 1, Items: []snowid.ID{0, 7}, ByID: map[snowid.ID]string{42: "x"}}
	text, err := json.Marshal(in)
	if err != nil {
		t.Fatal(err)
	}
	const want = `{"id":"9223372036854775807","items":["0","7"],"by_id":{"42":"x"}}`
	if string(text) != want {
		t.Fatalf("json.Marshal = %s, want %s", text, want)
	}
	var out order
	if err := json.Unmarshal(text, &out); err != nil {
		t.Fatal(err)
	}
	if out.ID != in.ID || len(out.Items) != 2 || out.Items[1] != 7 || out.ByID[42] != "x" {
		t.Fatalf("read back %+v, want %+v", out, in)
	}
	if s := snowid.ID(1234567890123456789).String(); s != "1234567890123456789" {
		t.Fatalf("String() = %q", s)
	}
	if id, err := snowid.ParseID("1234567890123456789"); err != nil || id != 1234567890123456789 {
		t.Fatalf("ParseID = %d, %v", id, err)
	}
	// An int64 underneath: database/sql's default converter takes it as one.
	if v, err := driver.DefaultParameterConverter.ConvertValue(snowid.ID(5)); err != nil ||
		v != int64(5) {
		t.Fatalf("as a database/sql parameter: %#v, %v", v, err)
	}
}

func TestIDRefusesAnythingButPlainDecimalInRange(t *testing.T) {
	for _, text := range []string{
		`123`, `1.5`, `"-1"`, `"+1"`, `" 1"`, `"1 "`, `"01"`, `"0x1f"`, `"1_000"`, `""`,
		`"9223372036854775808"`, `"18446744073709551616"`, `"99999999999999999999"`,
		`"\u0031"`, "\"\u0661\"", `true`, `["1"]`, `{"id":"1"}`, `"1e3"`,
	} {
		var id snowid.ID = 99
		err := json.Unmarshal([]byte(text), &id)
		if err == nil {
			t.Errorf("json.Unmarshal(%s) = %d, want an error", text, id)
			continue
		}
		if !errors.Is(err, snowid.ErrInvalidArgument) {
			// encoding/json refuses some before UnmarshalJSON sees them
			// (a broken text); those that reach it are ErrInvalidArgument.
			var syntax *json.SyntaxError
			if !errors.As(err, &syntax) {
				t.Errorf("json.Unmarshal(%s): %v, want ErrInvalidArgument", text, err)
			}
		}
		if id != 99 {
			t.Errorf("json.Unmarshal(%s) changed the ID to %d", text, id)
		}
	}
	var id snowid.ID = 99
	if err := json.Unmarshal([]byte(`null`), &id); err != nil || id != 99 {
		t.Errorf("null: %d, %v; want the ID unchanged", id, err)
	}
	if _, err := json.Marshal(snowid.ID(-1)); err == nil {
		t.Error("a negative ID was marshalled")
	}
	for _, text := range []string{"", "-5", "9223372036854775808", "00"} {
		if _, err := snowid.ParseID(text); !errors.Is(err, snowid.ErrInvalidArgument) {
			t.Errorf("ParseID(%q): %v, want ErrInvalidArgument", text, err)
		}
	}
}
