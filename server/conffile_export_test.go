package server

// QuoteConfigLine is quoteConfigLine, for the external tests' fuzz target.
var QuoteConfigLine = quoteConfigLine
