"""Test doubles and helpers shared across test areas."""
