from otter.test_files import test_case

OK_FORMAT = False

name = "q2"
points = 3

@test_case(points=None, hidden=False)
def test_config_problems(config_problems, tf_config):
    good = config_problems([tf_config(0), tf_config(1), tf_config(2)])
    assert good is not None, 'config_problems returns None: replace ... with your code'
    assert good == [], f'a correct cluster has no problems, not {good}'
    assert config_problems([tf_config(0), tf_config(1), tf_config(1)]), 'worker 1 twice'

