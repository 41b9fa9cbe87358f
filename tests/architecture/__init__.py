"""The code base's shape: codegen/'s import graph, runtime_c/'s layout, the tests' own layout."""
