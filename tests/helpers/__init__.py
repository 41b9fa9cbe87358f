"""What the tests share: model builders, the cffi kernel bindings, firmware and sanitizer
helpers, the run cache. Test modules import from here, never from each other
(tests/architecture/test_tests_layout.py)."""
