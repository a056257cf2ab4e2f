"""Helpers the test tiers share: real servers, corpora, schema checks, import graph."""
