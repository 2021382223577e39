module snowid.io/snowid

go 1.19
