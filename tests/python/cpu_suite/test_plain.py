# A test session for the plugin's CPU test: tests/python/fake_cuaudit.py reports a leak from
# test_leaks' line, as cuaudit would from a real allocation there.
def test_clean():
    assert 1 + 1 == 2


def test_leaks():
    kept = [0] * 4  # the fake report's leak points here
    assert kept


class TestGroup:
    def test_method(self):
        assert True
