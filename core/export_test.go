package core

// CleanTail exports cleanTail to the tests.
var CleanTail = cleanTail
